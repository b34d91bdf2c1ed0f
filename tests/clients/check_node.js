// node-postgres (pg): Client and Pool, every column of all_types with the
// JavaScript types pg gives by default, RowDescription metadata, $n
// parameters of every type, rowMode 'array', named prepared statements,
// multi-statement simple queries, and transactions.
'use strict';

const util = require('node:util');
const pg = require('pg');

const URL = requireEnv('CLIENT_URL');
const SCHEMA = requireEnv('CLIENT_SCHEMA');
const TARGET = process.env.CLIENT_TARGET || 'postgres';
const ALL_TYPES = `${SCHEMA}.all_types`;
const ORDERS = `${SCHEMA}.orders`;
const ORDERS_COUNT = 1000;
const STATUSES = ['new', 'paid', 'shipped', 'returned'];

function requireEnv(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set (run the checks through run.sh)`);
    process.exit(2);
  }
  return value;
}

// --- assertions: one line per group, the expected and actual on failure ---

let errors = null;
const failedGroups = [];
let groupCount = 0;

function typeName(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'Array';
  if (Buffer.isBuffer(value)) return 'Buffer';
  if (typeof value === 'object') return value.constructor ? value.constructor.name : 'Object';
  return typeof value;
}

function show(value) {
  return `${util.inspect(value, { depth: 5, breakLength: Infinity })} (${typeName(value)})`;
}

// Deep equality that also requires the same JavaScript type at the top.
function eq(label, expected, actual) {
  if (typeName(expected) !== typeName(actual) || !util.isDeepStrictEqual(expected, actual)) {
    errors.push(`${label}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

function ok(label, condition, detail) {
  if (!condition) errors.push(`${label}: ${detail || 'not true'}`);
}

// Runs `run` and records a failure unless it rejects with this SQLSTATE.
async function rejects(label, run, sqlstate) {
  try {
    await run();
  } catch (err) {
    if (err.code !== sqlstate) errors.push(`${label}: expected SQLSTATE ${sqlstate}, got ${err.code} (${err.message})`);
    return err;
  }
  errors.push(`${label}: expected SQLSTATE ${sqlstate}, but it succeeded`);
  return null;
}

async function group(title, run) {
  errors = [];
  groupCount += 1;
  try {
    await run();
  } catch (err) {
    errors.push(`threw ${err.stack || err}`);
  }
  if (errors.length) {
    failedGroups.push(title);
    console.log(`  FAIL ${title}`);
    for (const message of errors) console.log(`       - ${message}`);
  } else {
    console.log(`  ok   ${title}`);
  }
}

// --- the fixture, as node-postgres gives it ---

// pg parses date and timestamp (without time zone) as local time, so they
// are compared by their local calendar fields, whatever TZ the run has.
function localFields(date) {
  if (!(date instanceof Date)) return date;
  const pad = (n, width = 2) => String(n).padStart(width, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

// Interval objects compared as plain objects of their set fields.
function intervalFields(value) {
  return value === null ? null : Object.fromEntries(Object.entries(value));
}

const EXPECTED_ROWS = {
  1: {
    id: 1, c_int2: 32767, c_int4: 2147483647, c_int8: '9223372036854775807', c_numeric: '1234567890.12',
    c_float4: 1.5, c_float8: 0.1, c_bool: true, c_text: 'hello', c_varchar: 'world', c_char: 'ab   ',
    c_date: '2024-02-29 00:00:00.000', c_time: '12:34:56.789', c_timestamp: '2024-02-29 12:34:56.789',
    c_timestamptz: Date.UTC(2024, 1, 29, 10, 34, 56, 789), c_interval: { days: 1, hours: 2, minutes: 3, seconds: 4 },
    c_uuid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', c_bytea: Buffer.from('deadbeef', 'hex'),
    c_json: { a: [1, 2] }, c_jsonb: { b: { c: true } }, c_int4_array: [1, 2, 3], c_text_array: ['x', 'y z'],
  },
  3: {
    id: 3, c_int2: -32768, c_int4: -2147483648, c_int8: '-1', c_numeric: '-0.01', c_float4: -3.25, c_float8: 1e300,
    c_bool: false, c_text: 'ünïcode ✓', c_varchar: '', c_char: 'abcde', c_date: '1970-01-01 00:00:00.000',
    c_time: '00:00:00', c_timestamp: '1999-12-31 23:59:59.000', c_timestamptz: Date.UTC(2000, 0, 1),
    c_interval: { months: -1, days: 3 }, c_uuid: '00000000-0000-0000-0000-000000000000', c_bytea: Buffer.alloc(0),
    c_json: [], c_jsonb: [1, 'x', null], c_int4_array: [], c_text_array: [],
  },
};
const COLUMNS = Object.keys(EXPECTED_ROWS[1]);
EXPECTED_ROWS[2] = Object.fromEntries(COLUMNS.map((c) => [c, null]));
Object.assign(EXPECTED_ROWS[2], { id: 2, c_int4: 0 });

// The JavaScript type pg gives each column when it is not NULL.
const JS_TYPES = {
  id: 'number', c_int2: 'number', c_int4: 'number', c_int8: 'string', c_numeric: 'string', c_float4: 'number',
  c_float8: 'number', c_bool: 'boolean', c_text: 'string', c_varchar: 'string', c_char: 'string', c_date: 'Date',
  c_time: 'string', c_timestamp: 'Date', c_timestamptz: 'Date', c_interval: 'PostgresInterval', c_uuid: 'string',
  c_bytea: 'Buffer', c_json: 'Object', c_jsonb: 'Object', c_int4_array: 'Array', c_text_array: 'Array',
};

// [type OID, type modifier] of each column in RowDescription.
const FIELD_TYPES = {
  id: [23, -1], c_int2: [21, -1], c_int4: [23, -1], c_int8: [20, -1], c_numeric: [1700, ((12 << 16) | 2) + 4],
  c_float4: [700, -1], c_float8: [701, -1], c_bool: [16, -1], c_text: [25, -1], c_varchar: [1043, 40 + 4],
  c_char: [1042, 5 + 4], c_date: [1082, -1], c_time: [1083, -1], c_timestamp: [1114, -1],
  c_timestamptz: [1184, -1], c_interval: [1186, -1], c_uuid: [2950, -1], c_bytea: [17, -1], c_json: [114, -1],
  c_jsonb: [3802, -1], c_int4_array: [1007, -1], c_text_array: [1009, -1],
};

function checkAllTypesRow(label, row) {
  const expected = EXPECTED_ROWS[row.id];
  eq(`${label} columns`, COLUMNS, Object.keys(row));
  for (const column of COLUMNS) {
    const value = row[column];
    if (value !== null && expected[column] !== null) {
      // json/jsonb arrays come out as arrays; every other type as listed.
      const jsType = Array.isArray(expected[column]) && JS_TYPES[column] === 'Object' ? 'Array' : JS_TYPES[column];
      eq(`${label} id=${row.id} ${column} type`, jsType, typeName(value));
    }
    let actual = value;
    if (column === 'c_date' || column === 'c_timestamp') actual = localFields(value);
    if (column === 'c_timestamptz' && value instanceof Date) actual = value.getTime();
    if (column === 'c_interval' && value !== null) actual = intervalFields(value);
    eq(`${label} id=${row.id} ${column}`, expected[column], actual);
  }
}

function expectedOrder(id) {
  // total = round((id * 7.31) % 1000, 2), computed in cents to stay exact.
  const cents = (id * 731) % 100000;
  return {
    id: String(id), // bigint comes out as a string
    customer_id: id % 100,
    status: STATUSES[id % 4],
    total: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
    created_at: Date.UTC(2026, 0, 1) + id * 3600 * 1000,
  };
}

function checkOrderRow(label, row) {
  const actual = { ...row, created_at: row.created_at instanceof Date ? row.created_at.getTime() : row.created_at };
  eq(`${label} id=${row.id}`, expectedOrder(Number(row.id)), actual);
}

// --- the groups ---

async function checkAllTypes(client) {
  const result = await client.query(`SELECT ${COLUMNS.join(', ')} FROM ${ALL_TYPES} ORDER BY id`);
  eq('row count', 3, result.rowCount);
  eq('command', 'SELECT', result.command);
  for (const row of result.rows) checkAllTypesRow('text', row);
  const oid = (await client.query(`SELECT '${ALL_TYPES}'::regclass::oid AS oid`)).rows[0].oid;
  result.fields.forEach((field, index) => {
    eq(`${field.name} type`, FIELD_TYPES[field.name], [field.dataTypeID, field.dataTypeModifier]);
    eq(`${field.name} format`, 'text', field.format);
    // RowDescription names the table and column that a field comes from.
    eq(`${field.name} table oid`, oid, field.tableID);
    eq(`${field.name} column number`, index + 1, field.columnID);
  });
}

// [column expression, parameter selecting row 1, parameter selecting row 3].
// pg sends parameters as text: numbers, Dates, Buffers, arrays, objects.
const PARAMETERS = [
  ['c_int2', 32767, -32768], ['c_int4', 2147483647, -2147483648], ['c_int8', '9223372036854775807', -1],
  ['c_numeric', '1234567890.12', -0.01], ['c_float4', 1.5, -3.25], ['c_float8', 0.1, 1e300],
  ['c_bool', true, false], ['c_text', 'hello', 'ünïcode ✓'], ['c_varchar', 'world', ''], ['c_char', 'ab', 'abcde'],
  ['c_date', '2024-02-29', new Date(1970, 0, 1)], ['c_time', '12:34:56.789', '00:00:00'],
  ['c_timestamp', new Date(2024, 1, 29, 12, 34, 56, 789), '1999-12-31 23:59:59'],
  ['c_timestamptz', new Date(Date.UTC(2024, 1, 29, 10, 34, 56, 789)), new Date(Date.UTC(2000, 0, 1))],
  ['c_interval', '1 day 02:03:04', '-1 mons +3 days'], ['c_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    '00000000-0000-0000-0000-000000000000'],
  ['c_bytea', Buffer.from('deadbeef', 'hex'), Buffer.alloc(0)],
  // pg turns a JS array into a PostgreSQL array literal, so a JSON array
  // parameter is passed as its JSON text.
  ['c_jsonb', { b: { c: true } }, JSON.stringify([1, 'x', null])],
  ['c_json::jsonb', { a: [1, 2] }, '[]'],
  ['c_int4_array', [1, 2, 3], '{}'], ['c_text_array', ['x', 'y z'], []],
];

async function checkParameters(client) {
  for (const [column, value1, value3] of PARAMETERS) {
    // A parameter that is an empty JS array needs its type spelled out.
    const placeholder = column.endsWith('_array') ? `$1::${column === 'c_int4_array' ? 'int4' : 'text'}[]` : '$1';
    const sql = `SELECT id FROM ${ALL_TYPES} WHERE ${column} = ${placeholder} ORDER BY id`;
    eq(`${column} = row 1 value`, [{ id: 1 }], (await client.query(sql, [value1])).rows);
    eq(`${column} = row 3 value`, [{ id: 3 }], (await client.query(sql, [value3])).rows);
  }
  const several = await client.query(
    `SELECT id, status FROM ${ORDERS} WHERE customer_id = $1 AND status = $2 AND created_at >= $3 ORDER BY id`,
    [7, 'returned', new Date(Date.UTC(2026, 0, 20))]);
  eq('three parameters', [{ id: '507', status: 'returned' }, { id: '607', status: 'returned' },
    { id: '707', status: 'returned' }, { id: '807', status: 'returned' }, { id: '907', status: 'returned' }],
  several.rows);
  eq('NULL parameter', [{ isnull: true }], (await client.query('SELECT $1::int4 IS NULL AS isnull', [null])).rows);
  const echoed = await client.query('SELECT $1::numeric AS n, $2::bytea AS b, $3::int8[] AS a, $4::jsonb AS j',
    ['-98765432109876543210.000123', Buffer.from([0, 255]), ['9223372036854775807', '-1'], { k: 'v' }]);
  eq('echoed parameters', [{ n: '-98765432109876543210.000123', b: Buffer.from([0, 255]),
    a: ['9223372036854775807', '-1'], j: { k: 'v' } }], echoed.rows);
}

async function checkRowModeArray(client) {
  const result = await client.query({
    text: `SELECT id, status, total FROM ${ORDERS} WHERE id = ANY($1) ORDER BY id`,
    values: [[1, 2, 1000]],
    rowMode: 'array',
  });
  eq('rows as arrays', [['1', 'paid', '7.31'], ['2', 'shipped', '14.62'], ['1000', 'new', '310.00']], result.rows);
  eq('field names', ['id', 'status', 'total'], result.fields.map((f) => f.name));
}

async function checkNamedStatements(client) {
  // A named query is parsed once on the server and executed by name after.
  for (let i = 1; i <= 8; i += 1) {
    const id = i * 97;
    const result = await client.query({
      name: 'pgaccel-order-by-id',
      text: `SELECT id, customer_id, status, total, created_at FROM ${ORDERS} WHERE id = $1`,
      values: [id],
    });
    eq(`run ${i} row count`, 1, result.rowCount);
    if (result.rowCount === 1) checkOrderRow(`run ${i}`, result.rows[0]);
  }
}

async function checkSimpleQueries(client) {
  // Without parameters pg uses the simple query protocol; several
  // statements in one query give one result each.
  const results = await client.query(`SELECT count(*) AS n FROM ${ORDERS}; SELECT 'a' AS x, 2 AS y`);
  eq('result count', 2, results.length);
  eq('first result', [{ n: String(ORDERS_COUNT) }], results[0].rows);
  eq('second result', [{ x: 'a', y: 2 }], results[1].rows);
  const empty = await client.query(`SELECT id FROM ${ORDERS} WHERE id < 0`);
  eq('empty result', [[], 0, ['id']], [empty.rows, empty.rowCount, empty.fields.map((f) => f.name)]);
}

async function checkTransaction(client) {
  await client.query('BEGIN');
  const inside = await client.query(`SELECT count(*)::int AS n FROM ${ORDERS} WHERE status = $1`, ['paid']);
  eq('read in a transaction', [{ n: 250 }], inside.rows);
  await rejects('1/0', () => client.query('SELECT 1/0'), '22012');
  await rejects('statement after the error', () => client.query('SELECT $1::int AS x', [1]), '25P02');
  await rejects('simple query after the error', () => client.query('SELECT 1'), '25P02');
  await client.query('ROLLBACK');
  eq('after rollback', [{ x: 1 }], (await client.query('SELECT $1::int AS x', [1])).rows);
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  eq('isolation level', [{ transaction_isolation: 'repeatable read' }],
    (await client.query('SHOW TRANSACTION ISOLATION LEVEL')).rows);
  await client.query('COMMIT');
}

async function checkPool() {
  const pool = new pg.Pool({ connectionString: URL, max: 3, application_name: 'pgaccel-check-node-pool' });
  try {
    // Ten queries on three connections: each gets its own right answer.
    const ids = Array.from({ length: 10 }, (_, i) => i * 100 + 5);
    const results = await Promise.all(ids.map((id) => pool.query(
      `SELECT id, customer_id, status, total, created_at FROM ${ORDERS} WHERE id = $1`, [id])));
    results.forEach((result) => checkOrderRow('pool.query', result.rows[0]));
    eq('pool connections', 3, pool.totalCount);
    const client = await pool.connect();
    try {
      await checkTransaction(client);
    } finally {
      client.release();
    }
    eq('application_name', [{ name: 'pgaccel-check-node-pool' }],
      (await pool.query("SELECT current_setting('application_name') AS name")).rows);
  } finally {
    await pool.end();
  }
}

async function checkReadReplica(client) {
  await rejects('INSERT', () => client.query(
    `INSERT INTO ${ORDERS} VALUES (100001, 1, 'new', 1.00, now())`), '25006');
  eq('pg_is_in_recovery()', [{ r: true }], (await client.query('SELECT pg_is_in_recovery() AS r')).rows);
  eq('transaction_read_only', [{ transaction_read_only: 'on' }],
    (await client.query('SHOW transaction_read_only')).rows);
}

async function main() {
  console.log(`node ${process.version}, pg ${require('pg/package.json').version}`);
  const client = new pg.Client({ connectionString: URL, application_name: 'pgaccel-check-node' });
  await client.connect();
  await group('Client: every column of all_types, RowDescription', () => checkAllTypes(client));
  await group('Client: $n parameters of every type', () => checkParameters(client));
  await group("Client: rowMode 'array'", () => checkRowModeArray(client));
  await group('Client: named prepared statement executed 8 times', () => checkNamedStatements(client));
  await group('Client: simple query protocol, several statements', () => checkSimpleQueries(client));
  await group('Client: transaction, 25P02 until rollback', () => checkTransaction(client));
  await group('Pool: concurrent queries, a transaction on a pooled client', () => checkPool());
  if (TARGET === 'pgaccel') {
    await group('read replica: 25006 on write, in recovery, read only', () => checkReadReplica(client));
  } else {
    console.log('  skip read replica assertions: target is postgres');
  }
  await client.end();
  if (failedGroups.length) {
    console.log(`FAIL node: ${failedGroups.length} of ${groupCount} groups failed: ${failedGroups.join(', ')}`);
    process.exit(1);
  }
  console.log(`PASS node: ${groupCount} groups`);
}

main().catch((err) => {
  console.log(`FAIL node: ${err.stack || err}`);
  process.exit(1);
});
