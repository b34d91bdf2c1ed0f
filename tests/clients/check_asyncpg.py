"""asyncpg: every column of all_types (asyncpg always prepares, and always
uses binary), type introspection for composites, arrays of composites and
domains, custom codecs set by type name, prepared statements and cursors,
fetchval with typed parameters, COPY to a buffer, transactions."""
import asyncio
import csv
import datetime as dt
import io
import json
import uuid
from decimal import Decimal

import asyncpg

from clientcheck import (ALL_TYPES, ALL_TYPES_COLUMNS, ORDERS_COUNT, SCHEMA, TARGET, URL,
                         Check, check_all_types_row, check_order_row, expected_order, table)

ROW1, ROW3 = ALL_TYPES[1], ALL_TYPES[3]
ORDER_COLUMNS = ["id", "customer_id", "status", "total", "created_at"]
SELECT_ALL_TYPES = f"SELECT {', '.join(ALL_TYPES_COLUMNS)} FROM {table('all_types')}"

# asyncpg's default codecs hand json and jsonb out as their text; jsonb's
# text is the server's normalized form.
JSON_AS_TEXT = {
    1: {"c_json": '{"a": [1, 2]}', "c_jsonb": '{"b": {"c": true}}'},
    3: {"c_json": "[]", "c_jsonb": '[1, "x", null]'},
}

TYPE_NAMES = ["int4", "int2", "int4", "int8", "numeric", "float4", "float8", "bool", "text", "varchar",
              "bpchar", "date", "time", "timestamp", "timestamptz", "interval", "uuid", "bytea", "json",
              "jsonb", "int4[]", "text[]"]

# (column, row 1 value, row 3 value): each is a parameter that must select
# exactly its row. asyncpg sends every parameter in binary.
PARAMETERS = [
    ("c_int2", 32767, -32768), ("c_int4", 2147483647, -2147483648), ("c_int8", 9223372036854775807, -1),
    ("c_numeric", Decimal("1234567890.12"), Decimal("-0.01")), ("c_float4", 1.5, -3.25),
    ("c_float8", 0.1, 1e300), ("c_bool", True, False), ("c_text", "hello", "ünïcode ✓"),
    ("c_varchar", "world", ""), ("c_char", "ab", "abcde"), ("c_date", ROW1["c_date"], ROW3["c_date"]),
    ("c_time", ROW1["c_time"], ROW3["c_time"]), ("c_timestamp", ROW1["c_timestamp"], ROW3["c_timestamp"]),
    ("c_timestamptz", ROW1["c_timestamptz"].astimezone(dt.timezone(dt.timedelta(hours=-7))),
     ROW3["c_timestamptz"]),
    ("c_interval", ROW1["c_interval"], None), ("c_uuid", ROW1["c_uuid"], ROW3["c_uuid"]),
    ("c_bytea", ROW1["c_bytea"], ROW3["c_bytea"]), ("c_jsonb", '{"b": {"c": true}}', '[1, "x", null]'),
    ("c_int4_array", [1, 2, 3], []), ("c_text_array", ["x", "y z"], []),
]


def normalize_uuid(check, row):
    """asyncpg's UUID is its own subclass of uuid.UUID; check that, then
    compare as uuid.UUID."""
    value = row.get("c_uuid")
    if value is not None:
        check.true(f"id={row['id']} c_uuid is a uuid.UUID", isinstance(value, uuid.UUID), repr(type(value)))
        row["c_uuid"] = uuid.UUID(str(value))
    return row


async def check_connect(check, conn):
    check.eq("application_name", "pgaccel-check-asyncpg",
             await conn.fetchval("SELECT current_setting('application_name')"))
    settings = conn.get_settings()
    check.eq("server_encoding", "UTF8", settings.server_encoding)
    check.eq("client_encoding", "UTF8", settings.client_encoding)
    check.eq("integer_datetimes", "on", settings.integer_datetimes)
    check.eq("DateStyle", "ISO, MDY", settings.DateStyle)
    version = conn.get_server_version()
    check.true("server version", version.major >= 10, repr(version))


async def check_all_columns(check, conn):
    rows = await conn.fetch(SELECT_ALL_TYPES + " ORDER BY id")
    check.eq("row ids", [1, 2, 3], [row["id"] for row in rows])
    for row in rows:
        check_all_types_row(check, "fetch", normalize_uuid(check, dict(row)), JSON_AS_TEXT)


async def check_introspection(check, conn):
    # A whole-row reference has the table's composite type; asyncpg looks it
    # and its attributes' types up in pg_type before it can decode it.
    # pgaccel has no composite types and refuses whole-row references.
    whole_row = f"SELECT t FROM {table('all_types')} t WHERE id = 1"
    array_of_rows = f"SELECT array_agg(o ORDER BY id) FROM {table('orders')} o WHERE id <= 3"
    if TARGET == "pgaccel":
        await check.araises("whole-row reference", conn.fetchval(whole_row), "0A000",
                            asyncpg.FeatureNotSupportedError)
        await check.araises("array of whole rows", conn.fetchval(array_of_rows), "0A000",
                            asyncpg.FeatureNotSupportedError)
    else:
        record = await conn.fetchval(whole_row)
        check.eq("composite is a Record", asyncpg.Record, type(record))
        check_all_types_row(check, "composite", normalize_uuid(check, dict(record)), JSON_AS_TEXT)
        records = await conn.fetchval(array_of_rows)
        check.eq("array of composites length", 3, len(records))
        for record in records:
            check_order_row(check, "array of composites", dict(record))
    # Domains decode as their base type.
    check.eq("domain over int", 5, await conn.fetchval("SELECT 5::information_schema.cardinal_number"))
    check.eq("array of a domain", ["a", "b"],
             await conn.fetchval("SELECT ARRAY['a', 'b']::information_schema.sql_identifier[]"))
    # Codecs set by type name (looked up in pg_type by name and schema).
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    rows = await conn.fetch(SELECT_ALL_TYPES + " ORDER BY id")
    for row in rows:
        check_all_types_row(check, "json codec", normalize_uuid(check, dict(row)))
    check.eq("jsonb parameter through the codec", [1, "x", None],
             await conn.fetchval("SELECT $1::jsonb -> 'k'", {"k": [1, "x", None]}))
    await conn.reset_type_codec("json", schema="pg_catalog")
    await conn.reset_type_codec("jsonb", schema="pg_catalog")


async def check_prepared(check, conn):
    stmt = await conn.prepare(SELECT_ALL_TYPES + " WHERE id = $1")
    check.eq("attribute names", ALL_TYPES_COLUMNS, [a.name for a in stmt.get_attributes()])
    check.eq("attribute types", TYPE_NAMES, [a.type.name for a in stmt.get_attributes()])
    check.eq("parameter types", ["int4"], [t.name for t in stmt.get_parameters()])
    for row_id in (1, 3, 1, 2, 3):
        row = await stmt.fetchrow(row_id)
        check_all_types_row(check, "prepared", normalize_uuid(check, dict(row)), JSON_AS_TEXT)
    check.eq("no such row", None, await stmt.fetchrow(4))

    orders = await conn.prepare(f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} "
                                f"WHERE customer_id = $1 AND status = $2 AND created_at < $3 ORDER BY id")
    # varchar = $2 resolves to text = text: PostgreSQL infers text.
    check.eq("orders parameter types", ["int4", "text", "timestamptz"],
             [t.name for t in orders.get_parameters()])
    cutoff = dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc)
    for customer in (3, 7, 99):
        rows = await orders.fetch(customer, expected_order(customer)["status"], cutoff)
        expected_ids = [i for i in range(customer, 745, 100)]
        check.eq(f"customer {customer} ids", expected_ids, [r["id"] for r in rows])
        for row in rows:
            check_order_row(check, "prepared orders", dict(row))

    params = await conn.prepare(f"SELECT id FROM {table('all_types')} WHERE c_uuid = $1")
    check.eq("uuid parameter type", ["uuid"], [t.name for t in params.get_parameters()])
    check.eq("uuid parameter", 1, await params.fetchval(ROW1["c_uuid"]))
    check.eq("uuid parameter as str", 3, await params.fetchval(str(ROW3["c_uuid"])))


async def check_parameters(check, conn):
    for column, value1, value3 in PARAMETERS:
        sql = f"SELECT array_agg(id ORDER BY id) FROM {table('all_types')} WHERE {column} = $1"
        check.eq(f"{column} = row 1 value", [1], await conn.fetchval(sql, value1))
        if value3 is not None:
            check.eq(f"{column} = row 3 value", [3], await conn.fetchval(sql, value3))
    round_trips = [
        ("int8", -9223372036854775808), ("numeric", Decimal("-98765432109876543210.000123")),
        ("numeric", Decimal("NaN")), ("float8", float("inf")), ("bytea", bytes(range(256))),
        ("uuid", uuid.UUID(int=12345)), ("interval", dt.timedelta(days=-3, microseconds=7)),
        ("timestamptz", dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)),
        ("date", dt.date(1, 1, 1)), ("time", dt.time(23, 59, 59, 999999)),
        ("int4[]", [1, None, 3]), ("text[]", ["", "NULL", None, 'q"uote']),
        ("text", "tab\tnew\nline ✓"),
    ]
    for cast, value in round_trips:
        got = await conn.fetchval(f"SELECT $1::{cast}", value)
        if isinstance(value, Decimal) and value.is_nan():
            check.true(f"fetchval $1::{cast} NaN", isinstance(got, Decimal) and got.is_nan(), repr(got))
        elif isinstance(value, uuid.UUID):
            check.eq(f"fetchval $1::{cast}", value, uuid.UUID(str(got)))
        else:
            check.eq(f"fetchval $1::{cast}", value, got)
    # pgaccel's arrays have one dimension: more is refused, never flattened.
    if TARGET == "pgaccel":
        await check.araises("two-dimensional int4[]", conn.fetchval("SELECT $1::int4[]", [[1, 2], [3, None]]),
                            "0A000", asyncpg.FeatureNotSupportedError)
    else:
        check.eq("two-dimensional int4[]", [[1, 2], [3, None]],
                 await conn.fetchval("SELECT $1::int4[]", [[1, 2], [3, None]]))
    check.eq("arithmetic on typed parameters", Decimal("3.75"),
             await conn.fetchval("SELECT $1::numeric(10,2) + $2::int4", Decimal("1.75"), 2))
    check.eq("NULL parameter", True, await conn.fetchval("SELECT $1::text IS NULL", None))


async def check_cursor(check, conn):
    """Cursors are portals fetched in chunks, inside a transaction."""
    async with conn.transaction():
        ids = []
        async for row in conn.cursor(f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} "
                                     f"WHERE id > $1 ORDER BY id", 0, prefetch=77):
            check_order_row(check, "cursor iteration", dict(row))
            ids.append(row["id"])
        check.eq("cursor iteration ids", list(range(1, ORDERS_COUNT + 1)), ids)
        cursor = await conn.cursor(f"SELECT id FROM {table('orders')} ORDER BY id")
        check.eq("cursor fetch(5)", [1, 2, 3, 4, 5], [r["id"] for r in await cursor.fetch(5)])
        check.eq("cursor forward(10)", 10, await cursor.forward(10))
        check.eq("cursor fetchrow", 16, (await cursor.fetchrow())["id"])


async def check_copy(check, conn):
    buffer = io.BytesIO()
    status = await conn.copy_from_query(
        f"SELECT {', '.join(ORDER_COLUMNS)} FROM {table('orders')} WHERE id <= $1 ORDER BY id", 300,
        output=buffer)
    check.eq("copy_from_query status", "COPY 300", status)
    lines = buffer.getvalue().decode().splitlines()
    check.eq("copy_from_query lines", 300, len(lines))
    check.eq("copy_from_query first line", "1\t1\tpaid\t7.31\t2026-01-01 01:00:00+00", lines[0])
    for line in lines:
        fields = line.split("\t")
        expected = expected_order(int(fields[0]))
        check.eq(f"copy id={fields[0]}", [str(expected["customer_id"]), expected["status"], str(expected["total"])],
                 fields[1:4])

    buffer = io.BytesIO()
    status = await conn.copy_from_table("orders", schema_name=SCHEMA, output=buffer, format="csv", header=True)
    check.eq("copy_from_table status", f"COPY {ORDERS_COUNT}", status)
    rows = list(csv.reader(io.StringIO(buffer.getvalue().decode())))
    check.eq("copy_from_table header", ORDER_COLUMNS, rows[0])
    check.eq("copy_from_table rows", ORDERS_COUNT, len(rows) - 1)
    check.eq("copy_from_table ids", list(range(1, ORDERS_COUNT + 1)), sorted(int(r[0]) for r in rows[1:]))

    buffer = io.BytesIO()
    await conn.copy_from_query(f"SELECT c_bytea, c_text FROM {table('all_types')} ORDER BY id",
                               output=buffer, format="binary")
    data = buffer.getvalue()
    check.eq("binary copy signature", b"PGCOPY\n\xff\r\n\x00", data[:11])
    check.true("binary copy holds bytea and text", b"\xde\xad\xbe\xef" in data and "ünïcode ✓".encode() in data,
               repr(data))


async def check_transactions(check, conn):
    async with conn.transaction():
        check.true("in a transaction", conn.is_in_transaction())
        check.eq("read in a transaction", 250,
                 await conn.fetchval(f"SELECT count(*) FROM {table('orders')} WHERE status = $1", "new"))
        try:
            async with conn.transaction():  # a savepoint
                await conn.fetchval("SELECT 1/0")
        except asyncpg.DivisionByZeroError:
            pass
        check.eq("read after a rolled back savepoint", "shipped",
                 await conn.fetchval(f"SELECT status FROM {table('orders')} WHERE id = 42"))
    check.true("transaction ended", not conn.is_in_transaction())
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        check.eq("repeatable read", "repeatable read", await conn.fetchval("SHOW TRANSACTION ISOLATION LEVEL"))

    tx = conn.transaction()
    await tx.start()
    try:
        await check.araises("1/0", conn.fetchval("SELECT 1/0"), "22012", asyncpg.DivisionByZeroError)
        await check.araises("after the error", conn.fetchval("SELECT 1"), "25P02",
                            asyncpg.InFailedSQLTransactionError)
    finally:
        await tx.rollback()
    check.eq("after rollback", ORDERS_COUNT, await conn.fetchval(f"SELECT count(*) FROM {table('orders')}"))


async def check_read_replica(check, conn):
    await check.araises("INSERT", conn.execute(
        f"INSERT INTO {table('orders')} VALUES (100001, 1, 'new', 1.00, now())"),
        "25006", asyncpg.ReadOnlySQLTransactionError)
    check.eq("pg_is_in_recovery()", True, await conn.fetchval("SELECT pg_is_in_recovery()"))
    check.eq("transaction_read_only", "on", await conn.fetchval("SHOW transaction_read_only"))


async def main():
    check = Check("asyncpg")
    print(f"asyncpg {asyncpg.__version__}")
    conn = await asyncpg.connect(URL, server_settings={"application_name": "pgaccel-check-asyncpg"})
    groups = [
        ("connect: application_name, server settings", check_connect),
        ("every column of all_types", check_all_columns),
        ("type introspection: composite, array of composite, domain, set_type_codec", check_introspection),
        ("prepare(): attributes, parameters, repeated execution", check_prepared),
        ("parameters of every type, fetchval round trips", check_parameters),
        ("cursors (portals) in a transaction", check_cursor),
        ("copy_from_query / copy_from_table to a buffer", check_copy),
        ("transactions, savepoints, 25P02 until rollback", check_transactions),
    ]
    if TARGET == "pgaccel":
        groups.append(("read replica: 25006 on write, in recovery, read only", check_read_replica))
    for title, run in groups:
        with check.group(title):
            await run(check, conn)
        if conn.is_closed():
            conn = await asyncpg.connect(URL)
    if TARGET != "pgaccel":
        check.skip("read replica assertions", "target is postgres")
    await conn.close()
    check.finish()


if __name__ == "__main__":
    asyncio.run(main())
