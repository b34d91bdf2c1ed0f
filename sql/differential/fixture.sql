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

-- A small star schema in the style of retail decision-support benchmarks:
-- surrogate keys, fixed-width character codes, prices as numeric(7,2), a
-- date dimension, and facts with NULL foreign keys and measures.
CREATE TABLE {schema}.date_dim (
    d_date_sk int4 PRIMARY KEY,
    d_date date NOT NULL,
    d_year int4,
    d_moy int4,
    d_dom int4,
    d_qoy int4,
    d_day_name char(9),
    d_weekend char(1)
);
INSERT INTO {schema}.date_dim
    SELECT 2451545 + g, date '2000-01-01' + g, extract(year FROM date '2000-01-01' + g)::int4,
           extract(month FROM date '2000-01-01' + g)::int4, extract(day FROM date '2000-01-01' + g)::int4,
           extract(quarter FROM date '2000-01-01' + g)::int4, to_char(date '2000-01-01' + g, 'FMDay'),
           CASE WHEN extract(isodow FROM date '2000-01-01' + g) >= 6 THEN 'Y' ELSE 'N' END
    FROM generate_series(0, 730) g;

CREATE TABLE {schema}.item (
    i_item_sk int4 PRIMARY KEY,
    i_item_id char(16) NOT NULL,
    i_item_desc varchar(200),
    i_brand char(50),
    i_class char(50),
    i_category char(50),
    i_current_price numeric(7,2),
    i_manager_id int4
);
INSERT INTO {schema}.item
    SELECT g, 'AAAAAAAA' || lpad(to_hex(g * 7919 % 65536), 8, '0'),
           CASE WHEN g % 11 = 0 THEN NULL ELSE 'item number ' || g || ' of its kind' END,
           (ARRAY['amalgimporto #1', 'edu packscholar #2', 'exportiunivamalg #3', 'importoamalg #4'])[1 + g % 4],
           (ARRAY['pants', 'shirts', 'dresses', 'fiction', 'romance', 'pop'])[1 + g % 6],
           (ARRAY['Men', 'Women', 'Books', 'Music', NULL])[1 + g % 5],
           CASE WHEN g % 13 = 0 THEN NULL ELSE round(0.99 + (g * 37 % 9000) / 100.0, 2) END,
           1 + g % 9
    FROM generate_series(1, 60) g;

CREATE TABLE {schema}.store (
    s_store_sk int4 PRIMARY KEY,
    s_store_id char(16),
    s_store_name varchar(50),
    s_state char(2),
    s_zip char(10),
    s_gmt_offset numeric(5,2)
);
INSERT INTO {schema}.store
    SELECT g, 'STORE' || g, (ARRAY['ought', 'able', 'pri', 'ese', 'anti', 'cally'])[g],
           (ARRAY['TN', 'GA', 'TN', 'AL', 'SD', NULL])[g], lpad((31000 + g * 1733)::text, 5, '0'),
           (ARRAY[-5.00, -6.00, -5.00, -6.00, -7.00, -5.00])[g]
    FROM generate_series(1, 6) g;

CREATE TABLE {schema}.store_sales (
    ss_sold_date_sk int4,
    ss_item_sk int4 NOT NULL,
    ss_store_sk int4,
    ss_customer_sk int4,
    ss_ticket_number int8 NOT NULL,
    ss_quantity int4,
    ss_list_price numeric(7,2),
    ss_sales_price numeric(7,2),
    ss_ext_sales_price numeric(7,2),
    ss_coupon_amt numeric(7,2),
    ss_net_profit numeric(7,2),
    PRIMARY KEY (ss_item_sk, ss_ticket_number)
);
INSERT INTO {schema}.store_sales
    SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE 2451545 + (g * 53) % 731 END,
           1 + g % 60,
           CASE WHEN g % 89 = 0 THEN NULL ELSE 1 + g % 6 END,
           CASE WHEN g % 23 = 0 THEN NULL ELSE 1 + (g * 31) % 50 END,
           g / 3,
           CASE WHEN g % 41 = 0 THEN NULL ELSE 1 + (g * 17) % 100 END,
           round(1 + (g * 7919 % 20000) / 100.0, 2),
           round((1 + (g * 7919 % 20000) / 100.0) * (0.5 + (g % 50) / 100.0), 2),
           round((1 + (g * 7919 % 20000) / 100.0) * (0.5 + (g % 50) / 100.0) * (1 + (g * 17) % 100) / 100, 2),
           CASE WHEN g % 7 = 0 THEN round((g % 500) / 10.0, 2) ELSE 0.00 END,
           round(((g * 4099) % 60000 - 20000) / 100.0, 2)
    FROM generate_series(1, 4000) g;

CREATE TABLE {schema}.web_sales (
    ws_sold_date_sk int4,
    ws_item_sk int4 NOT NULL,
    ws_bill_customer_sk int4,
    ws_order_number int8 NOT NULL,
    ws_quantity int4,
    ws_sales_price numeric(7,2),
    ws_ext_sales_price numeric(7,2),
    ws_net_paid numeric(7,2),
    ws_ext_ship_cost numeric(7,2),
    PRIMARY KEY (ws_item_sk, ws_order_number)
);
INSERT INTO {schema}.web_sales
    SELECT CASE WHEN g % 83 = 0 THEN NULL ELSE 2451545 + (g * 29) % 731 END,
           1 + (g * 7) % 60,
           CASE WHEN g % 19 = 0 THEN NULL ELSE 1 + (g * 13) % 50 END,
           g / 2,
           1 + (g * 11) % 50,
           round(2 + (g * 6007 % 15000) / 100.0, 2),
           round((2 + (g * 6007 % 15000) / 100.0) * (1 + (g * 11) % 50) / 10, 2),
           round((2 + (g * 6007 % 15000) / 100.0) * (1 + (g * 11) % 50) / 12, 2),
           CASE WHEN g % 5 = 0 THEN NULL ELSE round((g % 900) / 10.0, 2) END
    FROM generate_series(1, 2500) g;
