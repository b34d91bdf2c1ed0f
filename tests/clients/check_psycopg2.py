"""psycopg2: client-side interpolation of every type as a parameter (each
must select exactly its row), the types of every column, named (server-side)
cursors, DictCursor and RealDictCursor."""
import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg2
import psycopg2.errors
import psycopg2.extensions
import psycopg2.extras
from psycopg2.extras import Json

from clientcheck import (ALL_TYPES, ALL_TYPES_COLUMNS, DSN, ORDERS_COUNT, TARGET,
                         Check, check_all_types_row, check_order_row, table)

ROW1, ROW3 = ALL_TYPES[1], ALL_TYPES[3]
ORDER_COLUMNS = ["id", "customer_id", "status", "total", "created_at"]


# (column expression, value of row 1, value of row 3, literal psycopg2 must
# make of the row 1 value). psycopg2 interpolates on the client, so the
# server parses these literals; the mogrify check pins what it is sent.
PARAMETERS = [
    ("c_int2", 32767, -32768, b"32767"),
    ("c_int4", 2147483647, -2147483648, b"2147483647"),
    ("c_int8", 9223372036854775807, -1, b"9223372036854775807"),
    ("c_numeric", Decimal("1234567890.12"), Decimal("-0.01"), b"1234567890.12"),
    ("c_float4", 1.5, -3.25, b"1.5"),
    ("c_float8", 0.1, 1e300, b"0.1"),
    ("c_bool", True, False, b"true"),
    ("c_text", "hello", "ünïcode ✓", b"'hello'"),
    ("c_varchar", "world", "", b"'world'"),
    ("c_char", "ab", "abcde", b"'ab'"),
    ("c_date", dt.date(2024, 2, 29), dt.date(1970, 1, 1), b"'2024-02-29'::date"),
    ("c_time", dt.time(12, 34, 56, 789000), dt.time(0, 0), b"'12:34:56.789000'::time"),
    ("c_timestamp", ROW1["c_timestamp"], ROW3["c_timestamp"],
     b"'2024-02-29T12:34:56.789000'::timestamp"),
    ("c_timestamptz", ROW1["c_timestamptz"].astimezone(ZoneInfo("Europe/Berlin")),
     ROW3["c_timestamptz"].astimezone(ZoneInfo("Asia/Kolkata")),
     b"'2024-02-29T11:34:56.789000+01:00'::timestamptz"),
    ("c_interval", ROW1["c_interval"], dt.timedelta(days=-27), b"'1 days 7384.000000 seconds'::interval"),
    ("c_uuid", ROW1["c_uuid"], ROW3["c_uuid"], b"'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid"),
    ("c_bytea", psycopg2.Binary(b"\xde\xad\xbe\xef"), psycopg2.Binary(b""), b"'\\xdeadbeef'::bytea"),
    ("c_jsonb", Json(ROW1["c_jsonb"]), Json(ROW3["c_jsonb"]), b"""'{"b": {"c": true}}'"""),
    # json has no = operator; its text is kept as loaded, so compare text.
    ("c_json::text", Json(ROW1["c_json"]), Json(ROW3["c_json"]), b"""'{"a": [1, 2]}'"""),
    ("c_int4_array", [1, 2, 3], None, b"ARRAY[1,2,3]"),
    ("c_text_array", ["x", "y z"], None, b"ARRAY['x','y z']"),
]


def connect(**kwargs):
    conn = psycopg2.connect(DSN, application_name="pgaccel-check-psycopg2", **kwargs)
    psycopg2.extras.register_uuid(conn_or_curs=conn)
    return conn


def check_column_types(check, conn):
    with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
        cur.execute(f"SELECT {', '.join(ALL_TYPES_COLUMNS)} FROM {table('all_types')} ORDER BY id")
        type_codes = [col.type_code for col in cur.description]
        rows = cur.fetchall()
    check.eq("type oids", [23, 21, 23, 20, 1700, 700, 701, 16, 25, 1043, 1042, 1082, 1083, 1114,
                           1184, 1186, 2950, 17, 114, 3802, 1007, 1009], type_codes)
    check.eq("row ids", [1, 2, 3], [row["id"] for row in rows])
    for row in rows:
        row = dict(row)
        # psycopg2 hands bytea out as memoryview; the rest is as in ALL_TYPES.
        if row["c_bytea"] is not None:
            check.eq(f"id={row['id']} c_bytea type", memoryview, type(row["c_bytea"]))
            row["c_bytea"] = bytes(row["c_bytea"])
        check_all_types_row(check, "RealDictCursor", row)


def check_interpolation(check, conn):
    with conn.cursor() as cur:
        for column, value1, value3, literal in PARAMETERS:
            sql = f"SELECT id FROM {table('all_types')} WHERE {column} = %s ORDER BY id"
            check.eq(f"{column} literal", literal, cur.mogrify("%s", [value1]))
            cur.execute(sql, [value1])
            check.eq(f"{column} = row 1 value", [(1,)], cur.fetchall())
            if value3 is not None:
                cur.execute(sql, [value3])
                check.eq(f"{column} = row 3 value", [(3,)], cur.fetchall())
        # Empty lists become '{}', which needs a cast to compare with an array.
        check.eq("empty list literal", b"'{}'", cur.mogrify("%s", [[]]))
        cur.execute(f"SELECT array_agg(id ORDER BY id) FROM {table('all_types')} "
                    f"WHERE c_int4_array = %s::int4[] AND c_text_array = %s::text[]", [[], []])
        check.eq("empty arrays", ([3],), cur.fetchone())
        # Named parameters, IN with a tuple, and a NULL parameter.
        cur.execute(f"SELECT id FROM {table('all_types')} WHERE id IN %(ids)s AND c_int4 <> %(zero)s "
                    f"AND (%(none)s IS NULL) ORDER BY id", {"ids": (1, 2, 3), "zero": 0, "none": None})
        check.eq("named parameters, IN tuple, NULL", [(1,), (3,)], cur.fetchall())


def check_named_cursor(check, conn):
    """A named cursor is DECLARE ... CURSOR in a transaction and FETCH
    FORWARD itersize at a time; the rows must arrive whole and in order."""
    with conn.cursor(name="orders_cursor") as cur:
        cur.itersize = 64
        cur.execute(f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} ORDER BY id")
        check.eq("fetchone", 1, cur.fetchone()[0])
        many = cur.fetchmany(10)
        check.eq("fetchmany(10) ids", list(range(2, 12)), [row[0] for row in many])
        rest = [dict(zip(ORDER_COLUMNS, row)) for row in cur]  # iterates in itersize chunks
        check.eq("rows by iteration", ORDERS_COUNT - 11, len(rest))
        check.eq("ids by iteration", list(range(12, ORDERS_COUNT + 1)), [row["id"] for row in rest])
        for row in rest:
            check_order_row(check, "named cursor", row)
        check.eq("fetchone at the end", None, cur.fetchone())
    conn.rollback()

    with conn.cursor(name="orders_scroll", scrollable=True) as cur:
        cur.execute(f"SELECT id, status FROM {table('orders')} WHERE customer_id = %s ORDER BY id", [42])
        check.eq("scrollable first rows", [(42, "shipped"), (142, "shipped")], cur.fetchmany(2))
        cur.scroll(5, mode="absolute")
        check.eq("scroll absolute 5", (542, "shipped"), cur.fetchone())
        cur.scroll(-3)
        check.eq("scroll relative -3", (342, "shipped"), cur.fetchone())
    conn.rollback()


def check_dict_cursors(check, conn):
    with conn.cursor(cursor_factory=psycopg2.extras.DictCursor) as cur:
        cur.execute(f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} WHERE id = %s", [42])
        row = cur.fetchone()
        check.eq("DictCursor keys", ORDER_COLUMNS, list(row.keys()))
        check.eq("DictCursor by index", 42, row[0])
        check.eq("DictCursor by name", "shipped", row["status"])
        check_order_row(check, "DictCursor", row)
    with conn.cursor(cursor_factory=psycopg2.extras.RealDictCursor) as cur:
        cur.execute(f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} "
                    f"WHERE id BETWEEN %s AND %s ORDER BY id", [10, 12])
        rows = cur.fetchall()
        check.true("RealDictCursor rows are dicts", isinstance(rows[0], dict), repr(rows[0]))
        check.eq("RealDictCursor ids", [10, 11, 12], [row["id"] for row in rows])
        for row in rows:
            check_order_row(check, "RealDictCursor", row)
    conn.rollback()


def check_transaction(check, conn):
    """psycopg2 opens a transaction before the first statement; an error
    leaves it failed (25P02) until the rollback."""
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table('orders')}")
        check.eq("in a transaction", psycopg2.extensions.TRANSACTION_STATUS_INTRANS,
                 conn.get_transaction_status())
        check.raises("1/0", lambda: cur.execute("SELECT 1/0"), "22012", psycopg2.errors.DivisionByZero)
        check.raises("after the error", lambda: cur.execute("SELECT 1"), "25P02",
                     psycopg2.errors.InFailedSqlTransaction)
        conn.rollback()
        cur.execute(f"SELECT count(*) FROM {table('orders')}")
        check.eq("after rollback", (ORDERS_COUNT,), cur.fetchone())
    conn.commit()


def check_read_replica(check, conn):
    conn.rollback()
    with conn.cursor() as cur:
        check.raises("INSERT", lambda: cur.execute(
            f"INSERT INTO {table('orders')} VALUES (100001, 1, 'new', 1.00, now())"),
            "25006", psycopg2.errors.ReadOnlySqlTransaction)
        conn.rollback()
        cur.execute("SELECT pg_is_in_recovery()")
        check.eq("pg_is_in_recovery()", (True,), cur.fetchone())
        cur.execute("SHOW transaction_read_only")
        check.eq("transaction_read_only", ("on",), cur.fetchone())
    conn.rollback()


def main():
    check = Check("psycopg2")
    print(f"psycopg2 {psycopg2.__version__}, libpq {psycopg2.extensions.libpq_version()}")
    conn = connect()
    groups = [
        ("every column of all_types: values and types", check_column_types),
        ("client-side interpolation of every type in WHERE", check_interpolation),
        ("named cursors: itersize, fetchmany, scroll", check_named_cursor),
        ("DictCursor and RealDictCursor", check_dict_cursors),
        ("transaction: 25P02 until rollback", check_transaction),
    ]
    if TARGET == "pgaccel":
        groups.append(("read replica: 25006 on write, in recovery, read only", check_read_replica))
    for title, run in groups:
        with check.group(title):
            run(check, conn)
        if conn.closed:
            conn = connect()
        else:
            conn.rollback()
    if TARGET != "pgaccel":
        check.skip("read replica assertions", "target is postgres")
    conn.close()
    check.finish()


if __name__ == "__main__":
    main()
