-- The tables every client check reads. `{schema}` is replaced by a schema of
-- the test's own; pgaccel serves the same tables under the same names, so a
-- check passes against PostgreSQL and against pgaccel alike.
CREATE TABLE {schema}.all_types (
    id int4 PRIMARY KEY,
    c_int2 int2,
    c_int4 int4 NOT NULL,
    c_int8 int8,
    c_numeric numeric(12,2),
    c_float4 float4,
    c_float8 float8,
    c_bool bool,
    c_text text,
    c_varchar varchar(40),
    c_char char(5),
    c_date date,
    c_time time,
    c_timestamp timestamp,
    c_timestamptz timestamptz,
    c_interval interval,
    c_uuid uuid,
    c_bytea bytea,
    c_json json,
    c_jsonb jsonb,
    c_int4_array int4[],
    c_text_array text[]
);
INSERT INTO {schema}.all_types VALUES
    (1, 32767, 2147483647, 9223372036854775807, 1234567890.12, 1.5, 0.1, true,
     'hello', 'world', 'ab', '2024-02-29', '12:34:56.789', '2024-02-29 12:34:56.789',
     '2024-02-29 12:34:56.789+02', '1 day 02:03:04', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
     '\xdeadbeef', '{"a": [1, 2]}', '{"b": {"c": true}}', '{1,2,3}', '{"x","y z"}'),
    (2, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (3, -32768, -2147483648, -1, -0.01, -3.25, 1e300, false,
     'ünïcode ✓', '', 'abcde', '1970-01-01', '00:00:00', '1999-12-31 23:59:59',
     '2000-01-01 00:00:00+00', '-1 mons +3 days', '00000000-0000-0000-0000-000000000000',
     '\x', '[]', '[1, "x", null]', '{}', '{}');

CREATE TABLE {schema}.orders (
    id bigint PRIMARY KEY,
    customer_id int4 NOT NULL,
    status varchar(20) NOT NULL,
    total numeric(12,2),
    created_at timestamptz NOT NULL
);
INSERT INTO {schema}.orders
SELECT g, g % 100, (ARRAY['new','paid','shipped','returned'])[g % 4 + 1],
       round((g * 7.31)::numeric % 1000, 2),
       timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour'
FROM generate_series(1, 1000) g;
COMMENT ON TABLE {schema}.orders IS 'Orders of the client checks';
