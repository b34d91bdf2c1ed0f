"""SQLAlchemy 2 on one driver (argument: psycopg2 or psycopg): the dialect's
first-connect queries, reflection through inspect(), Core and ORM selects,
and pandas.read_sql through the engine."""
import datetime as dt
import sys
from decimal import Decimal

import pandas as pd
import sqlalchemy as sa
from sqlalchemy import (BigInteger, Integer, MetaData, Numeric, String, Table, bindparam,
                        create_engine, func, inspect, select, text)
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from clientcheck import (ORDERS_COUNT, SCHEMA, TARGET, URL, Check, check_order_row,
                         expected_order, table)

DRIVERS = {"psycopg2": "postgresql+psycopg2", "psycopg": "postgresql+psycopg"}

# What reflection must find for every column: (type class, its details, nullable).
ALL_TYPES_REFLECTED = [
    ("id", pg.INTEGER, {}, False), ("c_int2", pg.SMALLINT, {}, True),
    ("c_int4", pg.INTEGER, {}, False), ("c_int8", pg.BIGINT, {}, True),
    ("c_numeric", pg.NUMERIC, {"precision": 12, "scale": 2}, True),
    ("c_float4", pg.REAL, {}, True), ("c_float8", pg.DOUBLE_PRECISION, {"precision": 53}, True),
    ("c_bool", pg.BOOLEAN, {}, True), ("c_text", pg.TEXT, {}, True),
    ("c_varchar", pg.VARCHAR, {"length": 40}, True), ("c_char", pg.CHAR, {"length": 5}, True),
    ("c_date", pg.DATE, {}, True), ("c_time", pg.TIME, {"timezone": False}, True),
    ("c_timestamp", pg.TIMESTAMP, {"timezone": False}, True),
    ("c_timestamptz", pg.TIMESTAMP, {"timezone": True}, True),
    ("c_interval", pg.INTERVAL, {}, True), ("c_uuid", pg.UUID, {}, True),
    ("c_bytea", pg.BYTEA, {}, True), ("c_json", pg.JSON, {}, True),
    ("c_jsonb", pg.JSONB, {}, True), ("c_int4_array", pg.ARRAY, {}, True),
    ("c_text_array", pg.ARRAY, {}, True),
]
ORDERS_REFLECTED = [
    ("id", pg.BIGINT, {}, False), ("customer_id", pg.INTEGER, {}, False),
    ("status", pg.VARCHAR, {"length": 20}, False),
    ("total", pg.NUMERIC, {"precision": 12, "scale": 2}, True),
    ("created_at", pg.TIMESTAMP, {"timezone": True}, False),
]


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = {"schema": SCHEMA}

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    customer_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(20))
    total: Mapped[Decimal | None] = mapped_column(Numeric(12, 2))
    created_at: Mapped[dt.datetime] = mapped_column(sa.DateTime(timezone=True))


def engine_for(driver):
    url = sa.make_url(URL).set(drivername=DRIVERS[driver])
    return create_engine(url, connect_args={"application_name": f"pgaccel-check-sqlalchemy-{driver}"})


def check_connect(check, engine):
    with engine.connect() as conn:
        check.eq("SELECT 1", 1, conn.execute(text("SELECT 1")).scalar_one())
        info = engine.dialect.server_version_info
        check.true("server_version_info", isinstance(info, tuple) and info[0] >= 10, repr(info))
        check.eq("default isolation level", "READ COMMITTED", engine.dialect.default_isolation_level)
        check.eq("connection isolation level", "READ COMMITTED", conn.get_isolation_level())
        check.eq("current_schema()", "public", conn.execute(text("SELECT current_schema()")).scalar_one())
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
        check.eq("REPEATABLE READ option", "repeatable read",
                 conn.execute(text("SHOW TRANSACTION ISOLATION LEVEL")).scalar_one())
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        check.eq("AUTOCOMMIT option", ORDERS_COUNT,
                 conn.execute(text(f"SELECT count(*) FROM {table('orders')}")).scalar_one())


def check_reflected_columns(check, label, columns, expected):
    check.eq(f"{label} column names", [name for name, *_ in expected], [c["name"] for c in columns])
    by_name = {c["name"]: c for c in columns}
    for name, type_class, details, nullable in expected:
        column = by_name.get(name)
        if column is None:
            continue
        check.eq(f"{label}.{name} type", type_class, type(column["type"]))
        for attr, value in details.items():
            check.eq(f"{label}.{name} {attr}", value, getattr(column["type"], attr, None))
        check.eq(f"{label}.{name} nullable", nullable, column["nullable"])
        check.eq(f"{label}.{name} default", None, column["default"])


def check_inspect(check, engine):
    insp = inspect(engine)
    schemas = insp.get_schema_names()
    check.true("get_schema_names has the schema", SCHEMA in schemas, repr(schemas))
    check.true("get_schema_names has no pg_catalog", "pg_catalog" not in schemas, repr(schemas))
    check.eq("get_table_names", ["all_types", "orders"], sorted(insp.get_table_names(schema=SCHEMA)))
    check.true("has_table orders", insp.has_table("orders", schema=SCHEMA))
    check.true("has_table of a missing table", not insp.has_table("no_such_table", schema=SCHEMA))
    check_reflected_columns(check, "all_types", insp.get_columns("all_types", schema=SCHEMA),
                            ALL_TYPES_REFLECTED)
    array_items = {c["name"]: type(c["type"].item_type) for c in insp.get_columns("all_types", schema=SCHEMA)
                   if isinstance(c["type"], pg.ARRAY)}
    check.eq("array item types", {"c_int4_array": pg.INTEGER, "c_text_array": pg.TEXT}, array_items)
    check_reflected_columns(check, "orders", insp.get_columns("orders", schema=SCHEMA), ORDERS_REFLECTED)
    pk = insp.get_pk_constraint("orders", schema=SCHEMA)
    check.eq("orders pk columns", ["id"], pk["constrained_columns"])
    check.eq("orders pk name", "orders_pkey", pk["name"])
    check.eq("all_types pk name", "all_types_pkey", insp.get_pk_constraint("all_types", schema=SCHEMA)["name"])
    # The primary key's index is not listed by get_indexes on PostgreSQL.
    check.eq("orders indexes", [], insp.get_indexes("orders", schema=SCHEMA))
    check.eq("orders foreign keys", [], insp.get_foreign_keys("orders", schema=SCHEMA))
    check.eq("orders unique constraints", [], insp.get_unique_constraints("orders", schema=SCHEMA))
    check.eq("orders comment", {"text": "Orders of the client checks"},
             insp.get_table_comment("orders", schema=SCHEMA))
    check.eq("all_types comment", {"text": None}, insp.get_table_comment("all_types", schema=SCHEMA))
    check.eq("views", [], insp.get_view_names(schema=SCHEMA))


def check_core(check, engine):
    # Table(autoload_with=) reflects everything (columns, keys, indexes, comment).
    orders = Table("orders", MetaData(), schema=SCHEMA, autoload_with=engine)
    check.eq("reflected primary key", ["id"], [c.name for c in orders.primary_key.columns])
    check.eq("reflected comment", "Orders of the client checks", orders.comment)
    query = (select(orders.c.id, orders.c.customer_id, orders.c.status, orders.c.total, orders.c.created_at)
             .where(orders.c.customer_id == bindparam("customer"), orders.c.status.in_(["paid", "new"]))
             .order_by(orders.c.id.desc())
             .limit(3))
    with engine.connect() as conn:
        rows = [row._asdict() for row in conn.execute(query, {"customer": 4})]
        check.eq("select() ids", [904, 804, 704], [row["id"] for row in rows])
        for row in rows:
            check_order_row(check, "select()", row)
        total = conn.execute(select(func.sum(orders.c.total), func.count())
                             .where(orders.c.created_at >= dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc))).one()
        first = 31 * 24
        expected = sum(expected_order(i)["total"] for i in range(first, ORDERS_COUNT + 1))
        check.eq("aggregate with a timestamptz parameter", (expected, ORDERS_COUNT - first + 1), tuple(total))
        by_status = dict(conn.execute(select(orders.c.status, func.count()).group_by(orders.c.status)).all())
        check.eq("group by", {"new": 250, "paid": 250, "shipped": 250, "returned": 250}, by_status)


def check_orm(check, engine):
    with Session(engine) as session:
        orders = session.scalars(select(Order).where(Order.status == "paid", Order.customer_id == 1)
                                 .order_by(Order.id)).all()
        check.eq("scalars() ids", list(range(1, ORDERS_COUNT, 100)), [o.id for o in orders])
        for order in orders:
            check.true("scalars() returns Order", isinstance(order, Order), repr(order))
            check_order_row(check, "scalars()", vars(order))
        order = session.get(Order, 42)
        check.true("get(Order, 42) found", order is not None)
        if order is not None:
            check_order_row(check, "get(Order, 42)", vars(order))
        check.eq("get of a missing id", None, session.get(Order, ORDERS_COUNT + 1))
        count = session.scalar(select(func.count()).select_from(Order).where(Order.total > Decimal("990")))
        expected = sum(1 for i in range(1, ORDERS_COUNT + 1) if expected_order(i)["total"] > 990)
        check.eq("count with a Decimal parameter", expected, count)


def check_pandas(check, engine):
    frame = pd.read_sql(text(f"SELECT id, customer_id, status, total, created_at FROM {table('orders')} "
                             f"WHERE id <= :last ORDER BY id"), engine, params={"last": 500})
    check.eq("read_sql shape", (500, 5), frame.shape)
    dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}
    check.eq("read_sql dtypes", {"id": "int64", "customer_id": "int64", "status": "str",
                                 "total": "float64", "created_at": "datetime64[us, UTC]"}, dtypes)
    check.eq("read_sql ids", list(range(1, 501)), frame["id"].tolist())
    check.eq("read_sql statuses", [expected_order(i)["status"] for i in range(1, 501)], frame["status"].tolist())
    check.eq("read_sql totals", [float(expected_order(i)["total"]) for i in range(1, 501)],
             frame["total"].tolist())
    check.eq("read_sql created_at", [pd.Timestamp(expected_order(i)["created_at"]) for i in range(1, 501)],
             frame["created_at"].tolist())

    table_frame = pd.read_sql_table("orders", engine, schema=SCHEMA)
    check.eq("read_sql_table shape", (ORDERS_COUNT, 5), table_frame.shape)
    check.eq("read_sql_table sum of customer_id", sum(i % 100 for i in range(1, ORDERS_COUNT + 1)),
             int(table_frame["customer_id"].sum()))

    types = pd.read_sql(text(f"SELECT id, c_int2, c_float8, c_bool, c_text, c_date, c_timestamp "
                             f"FROM {table('all_types')} ORDER BY id"), engine)
    dtypes = {name: str(dtype) for name, dtype in types.dtypes.items()}
    check.eq("all_types dtypes", {"id": "int64", "c_int2": "float64", "c_float8": "float64",
                                  "c_bool": "object", "c_text": "str", "c_date": "object",
                                  "c_timestamp": "datetime64[us]"}, dtypes)
    first = types.iloc[0]
    check.eq("c_int2", 32767.0, float(first["c_int2"]))
    check.eq("c_bool", True, first["c_bool"])
    check.eq("c_date", dt.date(2024, 2, 29), first["c_date"])
    check.eq("c_timestamp", pd.Timestamp("2024-02-29 12:34:56.789"), first["c_timestamp"])
    check.true("NULL int2 is NaN", pd.isna(types.iloc[1]["c_int2"]))
    check.eq("unicode text", "ünïcode ✓", types.iloc[2]["c_text"])


def check_read_replica(check, engine):
    with engine.connect() as conn:
        check.raises("INSERT", lambda: conn.execute(text(
            f"INSERT INTO {table('orders')} VALUES (100001, 1, 'new', 1.00, now())")), "25006")
        conn.rollback()
        check.eq("pg_is_in_recovery()", True, conn.execute(text("SELECT pg_is_in_recovery()")).scalar_one())
        check.eq("transaction_read_only", "on", conn.execute(text("SHOW transaction_read_only")).scalar_one())


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in DRIVERS:
        sys.exit(f"usage: check_sqlalchemy.py {{{'|'.join(DRIVERS)}}}")
    driver = sys.argv[1]
    check = Check(f"sqlalchemy-{driver}")
    print(f"SQLAlchemy {sa.__version__}, pandas {pd.__version__}, url {DRIVERS[driver]}://...")
    engine = engine_for(driver)
    groups = [
        ("create_engine + connect, first-connect queries, isolation levels", check_connect),
        ("inspect(): schemas, tables, columns, keys, indexes, comment", check_inspect),
        ("Core select() with parameters", check_core),
        ("ORM: scalars(select(Order)), get(Order, 42)", check_orm),
        ("pandas read_sql / read_sql_table", check_pandas),
    ]
    if TARGET == "pgaccel":
        groups.append(("read replica: 25006 on write, in recovery, read only", check_read_replica))
    for title, run in groups:
        with check.group(title):
            run(check, engine)
    if TARGET != "pgaccel":
        check.skip("read replica assertions", "target is postgres")
    engine.dispose()
    check.finish()


if __name__ == "__main__":
    main()
