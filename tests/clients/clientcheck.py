"""Shared pieces of the Python client checks: the environment, the assertion
groups that print one line each, and the values the fixture holds.

A check makes a `Check`, runs its groups with `with check.group("name"):`,
and ends with `check.finish()`, which prints PASS/FAIL and exits 0/1.
Inside a group, `check.eq(label, expected, actual)` compares value AND type,
so a server that sends the right digits with the wrong type OID fails too.
"""
import datetime as dt
import os
import sys
import traceback
import uuid
from decimal import Decimal

UTC = dt.timezone.utc


# --- environment -----------------------------------------------------------

def env(name, default=None):
    value = os.environ.get(name, default)
    if value is None:
        sys.exit(f"{name} is not set (run the checks through run.sh)")
    return value


DSN = env("CLIENT_DSN")
SCHEMA = env("CLIENT_SCHEMA")
TARGET = env("CLIENT_TARGET", "postgres")
URL = env("CLIENT_URL")  # postgresql://user@host:port/db, made by run.sh
if TARGET not in ("postgres", "pgaccel"):
    sys.exit(f"CLIENT_TARGET must be postgres or pgaccel, not {TARGET!r}")


def table(name):
    """The schema-qualified name of a fixture table."""
    return f"{SCHEMA}.{name}"


# --- assertions ------------------------------------------------------------

class Mismatch(Exception):
    pass


class Check:
    def __init__(self, name):
        self.name = name
        self.failed_groups = []
        self.groups = 0
        self._errors = None

    def group(self, title):
        return _Group(self, title)

    def skip(self, title, why):
        print(f"  skip {title}: {why}", flush=True)

    def eq(self, label, expected, actual, exact_type=True):
        """Records a failure unless actual == expected and, with exact_type,
        type(actual) is type(expected). Decimals must also print the same,
        so a numeric(12,2) that comes back as 1234567890.1200 is caught."""
        problem = None
        if exact_type and type(actual) is not type(expected):
            problem = "type"
        elif actual != expected:
            problem = "value"
        elif isinstance(expected, Decimal) and str(actual) != str(expected):
            problem = "scale"
        elif isinstance(expected, dt.datetime) and (expected.tzinfo is None) != (actual.tzinfo is None):
            problem = "tzinfo"
        if problem:
            self.fail(f"{label}: {problem} differs: expected {expected!r} "
                      f"({type(expected).__name__}), got {actual!r} ({type(actual).__name__})")

    def true(self, label, condition, detail=""):
        if not condition:
            self.fail(f"{label}: {detail or 'not true'}")

    def fail(self, message):
        self._errors.append(message)

    def raises(self, label, call, sqlstate, exc_type=None):
        """Calls `call()` and records a failure unless it raises an error of
        the given SQLSTATE (and class, when given). Returns the exception."""
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - any client's error class
            state = sqlstate_of(exc)
            if state != sqlstate:
                self.fail(f"{label}: expected SQLSTATE {sqlstate}, got {state} ({exc!r})")
            elif exc_type is not None and not isinstance(exc, exc_type):
                self.fail(f"{label}: expected {exc_type.__name__}, got {type(exc).__name__}")
            return exc
        self.fail(f"{label}: expected SQLSTATE {sqlstate}, but it succeeded")
        return None

    async def araises(self, label, awaitable, sqlstate, exc_type=None):
        """raises() for an awaitable (asyncpg)."""
        try:
            await awaitable
        except Exception as exc:  # noqa: BLE001

            def reraise():
                raise exc

            return self.raises(label, reraise, sqlstate, exc_type)
        self.fail(f"{label}: expected SQLSTATE {sqlstate}, but it succeeded")
        return None

    def finish(self):
        total = self.groups
        if self.failed_groups:
            print(f"FAIL {self.name}: {len(self.failed_groups)} of {total} groups failed: "
                  + ", ".join(self.failed_groups), flush=True)
            sys.exit(1)
        print(f"PASS {self.name}: {total} groups", flush=True)
        sys.exit(0)


class _Group:
    def __init__(self, check, title):
        self.check = check
        self.title = title

    def __enter__(self):
        self.check._errors = []
        return self.check

    def __exit__(self, exc_type, exc, tb):
        check = self.check
        check.groups += 1
        if exc is not None:
            frame = traceback.extract_tb(tb)[-1]
            check._errors.append(f"raised {exc_type.__name__}: {exc} "
                                 f"(at {os.path.basename(frame.filename)}:{frame.lineno})")
        if check._errors:
            check.failed_groups.append(self.title)
            print(f"  FAIL {self.title}", flush=True)
            for message in check._errors:
                print(f"       - {message}", flush=True)
        else:
            print(f"  ok   {self.title}", flush=True)
        return True  # the next group still runs


def sqlstate_of(exc):
    """The SQLSTATE of an error of psycopg, psycopg2 or asyncpg."""
    for attr in ("sqlstate", "pgcode"):
        value = getattr(exc, attr, None)
        if value:
            return value
    diag = getattr(exc, "diag", None)
    if diag is not None and getattr(diag, "sqlstate", None):
        return diag.sqlstate
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    return sqlstate_of(orig) if orig is not None else None


# --- the fixture -----------------------------------------------------------

ALL_TYPES_COLUMNS = [
    "id", "c_int2", "c_int4", "c_int8", "c_numeric", "c_float4", "c_float8",
    "c_bool", "c_text", "c_varchar", "c_char", "c_date", "c_time", "c_timestamp",
    "c_timestamptz", "c_interval", "c_uuid", "c_bytea", "c_json", "c_jsonb",
    "c_int4_array", "c_text_array",
]

# The rows of all_types as the Python drivers' default adapters give them.
# Intervals: PostgreSQL keeps months apart; the drivers count a month as 30
# days, so '-1 mons +3 days' is timedelta(days=-27).
ALL_TYPES = {
    1: dict(
        id=1, c_int2=32767, c_int4=2147483647, c_int8=9223372036854775807,
        c_numeric=Decimal("1234567890.12"), c_float4=1.5, c_float8=0.1, c_bool=True,
        c_text="hello", c_varchar="world", c_char="ab   ", c_date=dt.date(2024, 2, 29),
        c_time=dt.time(12, 34, 56, 789000),
        c_timestamp=dt.datetime(2024, 2, 29, 12, 34, 56, 789000),
        c_timestamptz=dt.datetime(2024, 2, 29, 10, 34, 56, 789000, tzinfo=UTC),
        c_interval=dt.timedelta(days=1, hours=2, minutes=3, seconds=4),
        c_uuid=uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        c_bytea=b"\xde\xad\xbe\xef", c_json={"a": [1, 2]}, c_jsonb={"b": {"c": True}},
        c_int4_array=[1, 2, 3], c_text_array=["x", "y z"],
    ),
    2: dict({c: None for c in ALL_TYPES_COLUMNS}, id=2, c_int4=0),
    3: dict(
        id=3, c_int2=-32768, c_int4=-2147483648, c_int8=-1,
        c_numeric=Decimal("-0.01"), c_float4=-3.25, c_float8=1e300, c_bool=False,
        c_text="ünïcode ✓", c_varchar="", c_char="abcde", c_date=dt.date(1970, 1, 1),
        c_time=dt.time(0, 0), c_timestamp=dt.datetime(1999, 12, 31, 23, 59, 59),
        c_timestamptz=dt.datetime(2000, 1, 1, tzinfo=UTC),
        c_interval=dt.timedelta(days=-27),
        c_uuid=uuid.UUID("00000000-0000-0000-0000-000000000000"),
        c_bytea=b"", c_json=[], c_jsonb=[1, "x", None],
        c_int4_array=[], c_text_array=[],
    ),
}

ORDER_STATUSES = ["new", "paid", "shipped", "returned"]
ORDER_EPOCH = dt.datetime(2026, 1, 1, tzinfo=UTC)
ORDERS_COUNT = 1000


def expected_order(order_id):
    """Row `order_id` of orders, computed the way fixture.sql generates it."""
    total = (Decimal(order_id) * Decimal("7.31")) % 1000
    return dict(
        id=order_id,
        customer_id=order_id % 100,
        status=ORDER_STATUSES[order_id % 4],
        total=total.quantize(Decimal("0.01")),
        created_at=ORDER_EPOCH + dt.timedelta(hours=order_id),
    )


def check_all_types_row(check, label, row, overrides=None):
    """Compares a dict row of all_types with ALL_TYPES, column by column;
    `overrides` gives a driver's own representation of some columns."""
    expected = dict(ALL_TYPES[row["id"]], **(overrides or {}).get(row["id"], {}))
    check.eq(f"{label} columns", ALL_TYPES_COLUMNS, list(row.keys()))
    for column in ALL_TYPES_COLUMNS:
        check.eq(f"{label} id={row['id']} {column}", expected[column], row.get(column))


def check_order_row(check, label, row):
    """Compares a dict row of orders (id, customer_id, status, total,
    created_at) with the generated values."""
    expected = expected_order(row["id"])
    for column, value in expected.items():
        check.eq(f"{label} id={row['id']} {column}", value, row[column])
