-- The fixture the differential test serves through pgaccel and compares
-- with PostgreSQL itself: edge values of every type. `{schema}` is the
-- test's own schema.
CREATE TABLE {schema}.nums (
    id int4 PRIMARY KEY,
    i2 int2, i4 int4, i8 int8,
    n numeric(38,10), f4 float4, f8 float8,
    grp text
);
INSERT INTO {schema}.nums VALUES
    (1, 1, 1, 1, 1.5, 1.5, 1.5, 'a'),
    (2, -1, -1, -1, -2.5, -2.5, -2.5, 'a'),
    (3, 32767, 2147483647, 9223372036854775807, 1234567890123456789012345678.0123456789, 3.4e38, 1.7976931348623157e308, 'b'),
    (4, -32768, -2147483648, -9223372036854775808, -0.0000000001, -3.4e38, -1.7976931348623157e308, 'b'),
    (5, 0, 0, 0, 0, 0, 0, 'c'),
    (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (7, 7, 70000, 7000000000, 0.5, 0.1, 0.1, 'c'),
    (8, 8, 8, 8, 2.5, 'NaN', 'NaN', 'd'),
    (9, 9, 9, 9, 3.5, 'Infinity', 'Infinity', 'd'),
    (10, 10, 10, 10, -3.5, '-Infinity', '-Infinity', 'd'),
    (11, 11, 11, 11, 100, -0.0, -0.0, 'e'),
    (12, 12, 12, 12, 0.3333333333, 1e-30, 1e-300, 'e');

CREATE TABLE {schema}.texts (
    id int4 PRIMARY KEY,
    t text, v varchar(20), c char(5)
);
INSERT INTO {schema}.texts VALUES
    (1, 'hello', 'world', 'ab'),
    (2, '', '', ''),
    (3, NULL, NULL, NULL),
    (4, 'ünïcode ✓', 'Straße', 'é'),
    (5, 'Hello World', 'HELLO', 'abcde'),
    (6, '  padded  ', ' x ', ' y'),
    (7, 'a,b,,c', 'a_b%c', 'q'),
    (8, 'line
break', 'tab	here', 'z');

CREATE TABLE {schema}.times (
    id int4 PRIMARY KEY,
    d date, ts timestamp, tstz timestamptz, iv interval
);
INSERT INTO {schema}.times VALUES
    (1, '2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+00', '1 day 02:03:04'),
    (2, '1969-07-20', '1969-07-20 20:17:40', '1969-07-20 20:17:40+00', '-3 days'),
    (3, '2038-01-19', '2038-01-19 03:14:08', '2038-01-19 03:14:08+00', '1 year 2 mons'),
    (4, '2024-03-10', '2024-03-10 02:30:00', '2024-03-10 07:30:00+00', '00:00:00.000001'),
    (5, '2024-10-27', '2024-10-27 01:30:00', '2024-10-27 00:30:00+00', '-1 mons 3 days'),
    (6, NULL, NULL, NULL, NULL),
    (7, '0001-01-01', '1900-01-01 00:00:00', '1900-01-01 00:00:00+00', '100 years'),
    (8, '2000-01-01', '2000-01-01 00:00:00', '2000-01-01 00:00:00+00', '23:59:59.999999');

CREATE TABLE {schema}.customers (
    id int4 PRIMARY KEY,
    name text NOT NULL,
    region text,
    since date
);
INSERT INTO {schema}.customers
    SELECT g, 'customer ' || g, (ARRAY['north', 'south', 'east', 'west', NULL])[1 + g % 5],
           date '2020-01-01' + g * 37
    FROM generate_series(1, 50) g;

CREATE TABLE {schema}.orders (
    id int4 PRIMARY KEY,
    customer_id int4,
    amount numeric(12,2),
    qty int4,
    status text,
    placed timestamptz
);
INSERT INTO {schema}.orders
    SELECT g, 1 + (g * 7) % 60, round((g * 13.37) % 1000, 2), 1 + g % 9,
           (ARRAY['new', 'paid', 'shipped', 'returned'])[1 + g % 4],
           timestamptz '2024-01-01 00:00:00+00' + g * interval '7 hours 13 minutes'
    FROM generate_series(1, 400) g;

CREATE TABLE {schema}.docs (
    id int4 PRIMARY KEY,
    j jsonb,
    tags text[],
    scores int4[]
);
INSERT INTO {schema}.docs VALUES
    (1, '{"a": 1, "b": {"c": [1, 2, 3]}, "s": "x"}', '{red,green}', '{1,2,3}'),
    (2, '{"a": 2.5, "b": null, "s": "y", "arr": [{"k": 1}, {"k": 2}]}', '{blue}', '{}'),
    (3, '[1, "two", null, true]', '{}', '{10,20,30}'),
    (4, 'null', NULL, NULL),
    (5, NULL, '{"with space","with,comma"}', '{-1}'),
    (6, '{"a": -1, "nested": {"deep": {"deeper": "bottom"}}, "flag": false}', '{red}', '{5,5,5}'),
    (7, '"just a string"', '{green,red}', '{2147483647}'),
    (8, '{"a": 100000000000000000000, "unicode": "ünï", "empty": {}}', '{ünï}', '{0}');
