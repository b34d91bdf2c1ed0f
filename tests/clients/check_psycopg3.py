"""psycopg 3: text and binary results, server-side prepared statements with
text and binary parameters, COPY TO STDOUT in text, csv and binary, pipeline
mode, transactions and their failed state, session settings."""
import csv
import datetime as dt
import io
import logging
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
from psycopg import errors, pq
from psycopg.rows import dict_row
from psycopg.types.json import Json, Jsonb

from clientcheck import (ALL_TYPES, ALL_TYPES_COLUMNS, DSN, ORDERS_COUNT, TARGET,
                         Check, check_all_types_row, check_order_row,
                         expected_order, table)

APP_NAME = "pgaccel-check-psycopg3"
SELECT_ALL_TYPES = f"SELECT {', '.join(ALL_TYPES_COLUMNS)} FROM {table('all_types')} ORDER BY id"

# The type OID and type modifier details that RowDescription must carry for
# each column of all_types: (oid, precision, scale, display_size).
COLUMN_TYPES = {
    "id": (23, None, None, None), "c_int2": (21, None, None, None),
    "c_int4": (23, None, None, None), "c_int8": (20, None, None, None),
    "c_numeric": (1700, 12, 2, None), "c_float4": (700, None, None, None),
    "c_float8": (701, None, None, None), "c_bool": (16, None, None, None),
    "c_text": (25, None, None, None), "c_varchar": (1043, None, None, 40),
    "c_char": (1042, None, None, 5), "c_date": (1082, None, None, None),
    "c_time": (1083, None, None, None), "c_timestamp": (1114, None, None, None),
    "c_timestamptz": (1184, None, None, None), "c_interval": (1186, None, None, None),
    "c_uuid": (2950, None, None, None), "c_bytea": (17, None, None, None),
    "c_json": (114, None, None, None), "c_jsonb": (3802, None, None, None),
    "c_int4_array": (1007, None, None, None), "c_text_array": (1009, None, None, None),
}

ROW1, ROW3 = ALL_TYPES[1], ALL_TYPES[3]

# (column, value matching row 1, value matching row 3, SQL around the
# placeholder). Each is sent as a parameter and must select exactly its row.
PARAMETERS = [
    ("c_int2", ROW1["c_int2"], ROW3["c_int2"], "{}"),
    ("c_int4", ROW1["c_int4"], ROW3["c_int4"], "{}"),
    ("c_int8", ROW1["c_int8"], ROW3["c_int8"], "{}"),
    ("c_numeric", ROW1["c_numeric"], ROW3["c_numeric"], "{}"),
    ("c_float8", ROW1["c_float8"], ROW3["c_float8"], "{}"),
    ("c_bool", True, False, "{}"),
    ("c_text", ROW1["c_text"], ROW3["c_text"], "{}"),
    ("c_varchar", ROW1["c_varchar"], ROW3["c_varchar"], "{}"),
    ("c_date", ROW1["c_date"], ROW3["c_date"], "{}"),
    ("c_time", ROW1["c_time"], ROW3["c_time"], "{}"),
    ("c_timestamp", ROW1["c_timestamp"], ROW3["c_timestamp"], "{}"),
    # Aware datetimes in another zone: the server must compare instants.
    ("c_timestamptz", ROW1["c_timestamptz"].astimezone(ZoneInfo("Europe/Berlin")),
     ROW3["c_timestamptz"].astimezone(ZoneInfo("America/New_York")), "{}"),
    ("c_interval", ROW1["c_interval"], dt.timedelta(days=-27), "{}::interval"),
    ("c_uuid", ROW1["c_uuid"], ROW3["c_uuid"], "{}"),
    ("c_bytea", ROW1["c_bytea"], ROW3["c_bytea"], "{}"),
    ("c_jsonb", Jsonb(ROW1["c_jsonb"]), Jsonb(ROW3["c_jsonb"]), "{}"),
    ("c_json::jsonb", Json(ROW1["c_json"]), Json(ROW3["c_json"]), "{}::jsonb"),
    ("c_int4_array", ROW1["c_int4_array"], [], "{}::int4[]"),
    ("c_text_array", ROW1["c_text_array"], [], "{}::text[]"),
]


def connect(**kwargs):
    return psycopg.connect(DSN, application_name=APP_NAME, **kwargs)


def description_checks(check, cur, label):
    names = [col.name for col in cur.description]
    check.eq(f"{label} column names", ALL_TYPES_COLUMNS, names)
    for col in cur.description:
        oid, precision, scale, display = COLUMN_TYPES[col.name]
        check.eq(f"{label} {col.name} type oid", oid, col.type_code)
        check.eq(f"{label} {col.name} precision", precision, col.precision)
        check.eq(f"{label} {col.name} scale", scale, col.scale)
        check.eq(f"{label} {col.name} display size", display, col.display_size)


def check_results(check, conn, binary):
    label = "binary" if binary else "text"
    with conn.cursor(binary=binary, row_factory=dict_row) as cur:
        cur.execute(SELECT_ALL_TYPES)
        formats = {cur.pgresult.fformat(i) for i in range(cur.pgresult.nfields)}
        check.eq(f"{label} result formats", {1 if binary else 0}, formats)
        description_checks(check, cur, label)
        rows = cur.fetchall()
    check.eq(f"{label} row ids", [1, 2, 3], [r["id"] for r in rows])
    for row in rows:
        check_all_types_row(check, label, row)
    # The session's time zone decides the tzinfo of a timestamptz.
    check.true(f"{label} timestamptz tzinfo", rows[0]["c_timestamptz"].tzinfo is not None)


def check_prepared_parameters(check, conn, fmt):
    """Each parameter, with `%t` (text) or `%b` (binary) placeholders, in a
    statement that psycopg prepares on the server (prepare=True) and then
    executes by name; the second value must select another row, so a plan
    that ignored its parameters is caught."""
    label = "binary" if fmt == "%b" else "text"
    with conn.cursor() as cur:
        for column, value1, value3, wrap in PARAMETERS:
            sql = f"SELECT id FROM {table('all_types')} WHERE {column} = {wrap.format(fmt)} ORDER BY id"
            for attempt in range(3):
                cur.execute(sql, [value1], prepare=True)
                check.eq(f"{label} {column} = row 1 value (run {attempt})", [(1,)], cur.fetchall())
            cur.execute(sql, [value3], prepare=True)
            check.eq(f"{label} {column} = row 3 value", [(3,)], cur.fetchall())
        # Parameters come back unchanged in type and value.
        for value, cast in [(Decimal("1234567890.12"), "numeric"), (b"\x00\xff\x01", "bytea"),
                            (uuid.UUID(int=2**128 - 1), "uuid"), ([1, None, 3], "int4[]"),
                            (["a", "b,c", None], "text[]"),
                            (ROW1["c_timestamptz"], "timestamptz")]:
            for attempt in range(2):
                cur.execute(f"SELECT {fmt}::{cast}", [value], prepare=True)
                check.eq(f"{label} round trip {cast}", value, cur.fetchone()[0])
        cur.execute(f"SELECT {fmt}::jsonb -> 'k'", [Jsonb({"k": [1, {"z": None}]})], prepare=True)
        check.eq(f"{label} round trip jsonb", [1, {"z": None}], cur.fetchone()[0])
    # psycopg keeps the names of the statements it prepared on the server
    # (an internal of the pinned version): prepare=True really prepared.
    check.true(f"{label} statements were prepared", len(conn._prepared._names) > 0,
               "psycopg holds no prepared statement")


def check_numeric_parameters(check, conn):
    """A Decimal parameter keeps its own digits and scale wherever it goes:
    in arithmetic with an integer (`%s + 1` must not read it as an integer),
    times a column of another scale, compared with a column of fewer
    decimals, and cast to a numeric of fewer decimals. Text and binary,
    prepared on the server and not."""
    orders = table("orders")
    first_ten = sum((Decimal(g) * Decimal("7.31")) % 1000 for g in range(1, 11)).quantize(Decimal("0.01"))
    above = sum(1 for g in range(1, 1001) if ((Decimal(g) * Decimal("7.31")) % 1000).quantize(Decimal("0.01")) > Decimal("7.305"))
    cases = [
        ("SELECT {}::numeric + 1", [Decimal("1.5")], Decimal("2.5")),
        ("SELECT {} * 2", [Decimal("-0.50")], Decimal("-1.00")),
        ("SELECT {}::numeric(10,1)", [Decimal("1.25")], Decimal("1.3")),
        (f"SELECT sum(total) * {{}} FROM {orders} WHERE id <= 10", [Decimal("1.1")], first_ten * Decimal("1.1")),
        (f"SELECT count(*) FROM {orders} WHERE total > {{}}", [Decimal("7.305")], above),
        # A numeric divided by an integer is not an integer division.
        ("SELECT {} / 3", [Decimal("10")], Decimal("3.3333333333333333")),
        # Two values the server has no other type for.
        ("SELECT {} + {}", [Decimal("1.1"), Decimal("2.22")], Decimal("3.32")),
        # greatest() keeps the winner's own scale.
        (f"SELECT greatest(total, {{}}) FROM {orders} WHERE id = 1", [Decimal("20.5")], Decimal("20.5")),
        # An exponent, as Python prints some Decimals.
        ("SELECT {}", [Decimal("1E+2")], Decimal("100")),
    ]
    with conn.cursor() as cur:
        for fmt in ("%t", "%b"):
            for prepare in (False, True):
                label = f"{'binary' if fmt == '%b' else 'text'}{', prepared' if prepare else ''}"
                for sql, values, expected in cases:
                    text = sql.replace("{}", fmt)
                    cur.execute(text, values, prepare=prepare)
                    check.eq(f"{label}: {text} with {values}", expected, cur.fetchone()[0])


def check_prepare_threshold(check, conn):
    """Without prepare=True psycopg prepares a query on its 5th execution
    (prepare_threshold); results must not change across that switch."""
    with conn.cursor() as cur:
        for i in range(1, 9):
            order_id = i * 111
            cur.execute(f"SELECT id, customer_id, status, total, created_at FROM {table('orders')} WHERE id = %s",
                        [order_id])
            row = dict(zip(["id", "customer_id", "status", "total", "created_at"], cur.fetchone()))
            check_order_row(check, f"execution {i}", row)


def check_copy_text(check, conn):
    with conn.cursor() as cur:
        with cur.copy(f"COPY ({SELECT_ALL_TYPES}) TO STDOUT") as copy:
            copy.set_types(["int4", "int2", "int4", "int8", "numeric", "float4", "float8", "bool",
                            "text", "varchar", "bpchar", "date", "time", "timestamp",
                            "timestamptz", "interval", "uuid", "bytea", "json", "jsonb",
                            "int4[]", "text[]"])
            rows = [dict(zip(ALL_TYPES_COLUMNS, row)) for row in copy.rows()]
        check.eq("copy text row count", 3, len(rows))
        for row in rows:
            check_all_types_row(check, "copy text", row)
        check.eq("copy text rowcount", 3, cur.rowcount)


def check_copy_csv(check, conn):
    with conn.cursor() as cur:
        sql = (f"COPY (SELECT id, c_numeric, c_text, c_bool, c_date, c_bytea, c_text_array "
               f"FROM {table('all_types')} ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)")
        data = bytearray()
        with cur.copy(sql) as copy:
            for block in copy:
                data += block
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    check.eq("csv rows", [
        ["id", "c_numeric", "c_text", "c_bool", "c_date", "c_bytea", "c_text_array"],
        ["1", "1234567890.12", "hello", "t", "2024-02-29", "\\xdeadbeef", '{x,"y z"}'],
        ["2", "", "", "", "", "", ""],
        ["3", "-0.01", "ünïcode ✓", "f", "1970-01-01", "\\x", "{}"],
    ], rows)
    # NULL is an unquoted empty field, an empty string a quoted one.
    check.true("csv NULL vs empty string", b'\n3,-0.01,' in data and b"\n2,,,,,,\n" in data,
               f"raw csv: {bytes(data)!r}")


def check_copy_binary(check, conn):
    with conn.cursor() as cur:
        sql = (f"COPY (SELECT id, c_int8, c_numeric, c_float8, c_timestamptz, c_uuid, c_bytea, "
               f"c_jsonb, c_int4_array FROM {table('all_types')} ORDER BY id) TO STDOUT (FORMAT binary)")
        columns = ["id", "c_int8", "c_numeric", "c_float8", "c_timestamptz", "c_uuid", "c_bytea",
                   "c_jsonb", "c_int4_array"]
        with cur.copy(sql) as copy:
            copy.set_types(["int4", "int8", "numeric", "float8", "timestamptz", "uuid", "bytea",
                            "jsonb", "int4[]"])
            rows = []
            while (row := copy.read_row()) is not None:
                rows.append(dict(zip(columns, row)))
    check.eq("copy binary row ids", [1, 2, 3], [r["id"] for r in rows])
    for row in rows:
        for column in columns:
            check.eq(f"copy binary id={row['id']} {column}", ALL_TYPES[row["id"]][column], row[column])


def check_copy_table(check, conn):
    with conn.cursor() as cur:
        with cur.copy(f"COPY {table('orders')} TO STDOUT") as copy:
            copy.set_types(["int8", "int4", "varchar", "numeric", "timestamptz"])
            rows = [dict(zip(["id", "customer_id", "status", "total", "created_at"], row))
                    for row in copy.rows()]
    check.eq("copy orders row count", ORDERS_COUNT, len(rows))
    check.eq("copy orders ids", list(range(1, ORDERS_COUNT + 1)), sorted(r["id"] for r in rows))
    for row in rows:
        check_order_row(check, "copy orders", row)


def check_pipeline(check, conn):
    with conn.pipeline() as pipeline:
        cur1 = conn.cursor()
        cur2 = conn.cursor(binary=True)
        cur3 = conn.cursor()
        cur1.execute(f"SELECT count(*), sum(total) FROM {table('orders')}")
        cur2.execute(f"SELECT c_uuid, c_numeric FROM {table('all_types')} WHERE id = %s", [1])
        cur3.execute(f"SELECT status FROM {table('orders')} WHERE id = ANY(%s) ORDER BY id", [[1, 2, 3]])
        pipeline.sync()
        expected_sum = sum(expected_order(i)["total"] for i in range(1, ORDERS_COUNT + 1))
        check.eq("pipeline aggregate", (ORDERS_COUNT, expected_sum), cur1.fetchone())
        check.eq("pipeline binary row", (ROW1["c_uuid"], ROW1["c_numeric"]), cur2.fetchone())
        check.eq("pipeline third query", [("paid",), ("shipped",), ("returned",)], cur3.fetchall())
    check_pipeline_error(check, conn)


def check_pipeline_error(check, conn):
    """An error in a pipeline aborts what was queued after it; psycopg raises
    it (when it reads it: at an execute or at the end of the block), the
    queries queued before it keep their results, and the connection is
    usable after the block."""
    before, failing, after = conn.cursor(), conn.cursor(), conn.cursor()

    def failing_pipeline():
        with conn.pipeline():
            before.execute(f"SELECT count(*) FROM {table('orders')} WHERE customer_id = %s", [7])
            failing.execute("SELECT 1/0")
            after.execute("SELECT 2")

    check.raises("1/0 in a pipeline", failing_pipeline, "22012", errors.DivisionByZero)
    check.eq("query before the error", (10,), before.fetchone())
    check.eq("status after the pipeline", pq.TransactionStatus.IDLE, conn.info.transaction_status)
    with conn.cursor() as cur:
        cur.execute(f"SELECT status FROM {table('orders')} WHERE id = %s", [4])
        check.eq("query after the pipeline", ("new",), cur.fetchone())


def check_transactions(check, conn):
    with conn.transaction():
        with conn.cursor() as cur:
            check.eq("status inside transaction()", pq.TransactionStatus.INTRANS,
                     conn.info.transaction_status)
            cur.execute(f"SELECT count(*) FROM {table('orders')} WHERE status = %s", ["paid"])
            check.eq("read in transaction()", (250,), cur.fetchone())
            # A nested transaction() is a savepoint: its error rolls back only itself.
            try:
                with conn.transaction():
                    cur.execute("SELECT 1/0")
            except errors.DivisionByZero:
                pass
            cur.execute(f"SELECT status FROM {table('orders')} WHERE id = 42")
            check.eq("read after a rolled back savepoint", ("shipped",), cur.fetchone())
    check.eq("status after transaction()", pq.TransactionStatus.IDLE, conn.info.transaction_status)


def check_failed_transaction(check, conn):
    """Outside autocommit, a failed statement puts the transaction in the
    failed state: every statement answers 25P02 until the rollback."""
    conn.autocommit = False
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
            check.raises("1/0", lambda: cur.execute("SELECT 1/0"), "22012", errors.DivisionByZero)
            check.eq("status after the error", pq.TransactionStatus.INERROR,
                     conn.info.transaction_status)
            for attempt in range(2):
                check.raises(f"statement {attempt} after the error",
                             lambda: cur.execute(f"SELECT count(*) FROM {table('orders')}"),
                             "25P02", errors.InFailedSqlTransaction)
            conn.rollback()
            cur.execute(f"SELECT count(*) FROM {table('orders')}")
            check.eq("after rollback", (ORDERS_COUNT,), cur.fetchone())
            conn.commit()
    finally:
        conn.rollback()
        conn.autocommit = True


def check_settings(check, conn):
    with conn.cursor() as cur:
        check.eq("application_name", (APP_NAME,),
                 cur.execute("SELECT current_setting('application_name')").fetchone())
        check.eq("application_name parameter status", APP_NAME,
                 conn.info.parameter_status("application_name"))
        check.eq("isolation level", ("read committed",),
                 cur.execute("SHOW TRANSACTION ISOLATION LEVEL").fetchone())
        with conn.transaction():
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            check.eq("isolation level in a repeatable read transaction", ("repeatable read",),
                     cur.execute("SHOW TRANSACTION ISOLATION LEVEL").fetchone())
        zone = cur.execute("SHOW TIME ZONE").fetchone()[0]
        check.eq("SHOW TIME ZONE = TimeZone parameter status", conn.info.parameter_status("TimeZone"), zone)
        cur.execute("SET TIME ZONE 'Europe/Berlin'")
        check.eq("SHOW TIME ZONE after SET", ("Europe/Berlin",), cur.execute("SHOW TIME ZONE").fetchone())
        check.eq("TimeZone parameter status after SET", "Europe/Berlin",
                 conn.info.parameter_status("TimeZone"))
        cur.execute(f"SELECT c_timestamptz::text, c_timestamptz FROM {table('all_types')} WHERE id = 1")
        text, value = cur.fetchone()
        check.eq("timestamptz text in Europe/Berlin (winter)", "2024-02-29 11:34:56.789+01", text)
        check.eq("timestamptz value", ROW1["c_timestamptz"], value)
        check.eq("timestamptz utcoffset", dt.timedelta(hours=1), value.utcoffset())
        cur.execute("SELECT timestamptz '2024-07-01 12:00:00+00'::text")
        check.eq("timestamptz text in Europe/Berlin (summer)", ("2024-07-01 14:00:00+02",), cur.fetchone())
        with conn.cursor(binary=True) as bcur:
            bcur.execute(f"SELECT created_at FROM {table('orders')} WHERE id = 1")
            created = bcur.fetchone()[0]
            check.eq("binary timestamptz", expected_order(1)["created_at"], created)
            check.eq("binary timestamptz utcoffset", dt.timedelta(hours=1), created.utcoffset())
        cur.execute("RESET TIME ZONE")
        check.eq("SHOW TIME ZONE after RESET", (zone,), cur.execute("SHOW TIME ZONE").fetchone())


def check_read_replica(check, conn):
    with conn.cursor() as cur:
        check.raises("INSERT", lambda: cur.execute(
            f"INSERT INTO {table('orders')} VALUES (100001, 1, 'new', 1.00, now())"),
            "25006", errors.ReadOnlySqlTransaction)
        check.eq("pg_is_in_recovery()", (True,), cur.execute("SELECT pg_is_in_recovery()").fetchone())
        check.eq("transaction_read_only", ("on",), cur.execute("SHOW transaction_read_only").fetchone())


def main():
    check = Check("psycopg3")
    # psycopg logs a warning when a pipeline block ends on an error that the
    # pipeline error group causes on purpose; the check reports errors itself.
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    print(f"psycopg {psycopg.__version__}, libpq {pq.version()}, {pq.__impl__} implementation")
    conn = connect(autocommit=True)
    groups = [
        ("text results, every column of all_types", lambda: check_results(check, conn, binary=False)),
        ("binary results, every column of all_types", lambda: check_results(check, conn, binary=True)),
        ("prepared statements, text parameters", lambda: check_prepared_parameters(check, conn, "%t")),
        ("prepared statements, binary parameters", lambda: check_prepared_parameters(check, conn, "%b")),
        ("numeric parameters keep their own scale", lambda: check_numeric_parameters(check, conn)),
        ("prepare_threshold: prepared on the 5th execution", lambda: check_prepare_threshold(check, conn)),
        ("COPY (SELECT ...) TO STDOUT, text, set_types + rows()", lambda: check_copy_text(check, conn)),
        ("COPY (SELECT ...) TO STDOUT WITH (FORMAT csv, HEADER)", lambda: check_copy_csv(check, conn)),
        ("COPY (SELECT ...) TO STDOUT (FORMAT binary), read_row()", lambda: check_copy_binary(check, conn)),
        ("COPY orders TO STDOUT", lambda: check_copy_table(check, conn)),
        ("pipeline mode", lambda: check_pipeline(check, conn)),
        ("transaction() and savepoints", lambda: check_transactions(check, conn)),
        ("failed transaction: 25P02 until rollback", lambda: check_failed_transaction(check, conn)),
        ("settings: application_name, isolation level, time zone", lambda: check_settings(check, conn)),
    ]
    for title, run in groups:
        with check.group(title):
            run()
        if conn.closed or conn.broken:
            conn = connect(autocommit=True)
    if TARGET == "pgaccel":
        with check.group("read replica: 25006 on write, in recovery, read only"):
            check_read_replica(check, conn)
    else:
        check.skip("read replica assertions", "target is postgres")
    conn.close()
    check.finish()


if __name__ == "__main__":
    main()
