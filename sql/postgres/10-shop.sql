-- The worked example of the README: a small shop schema in database `test`.
-- psql -h 127.0.0.1 -U postgres -d test -f sql/postgres/10-shop.sql
\connect test
DROP SCHEMA IF EXISTS shop CASCADE;
CREATE SCHEMA shop;
CREATE TABLE shop.customers (
  id         int PRIMARY KEY,
  name       text NOT NULL,
  email      varchar(120) NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shop.orders (
  id          bigint PRIMARY KEY,
  customer_id int NOT NULL REFERENCES shop.customers (id),
  status      text NOT NULL,
  total       numeric(12,2) NOT NULL,
  items       jsonb NOT NULL,
  placed_at   timestamptz NOT NULL
);
INSERT INTO shop.customers (id, name, email)
SELECT g, 'customer ' || g, 'customer' || g || '@example.com' FROM generate_series(1, 1000) g;
INSERT INTO shop.orders
SELECT g,
       1 + (g * 7919) % 1000,
       (ARRAY['placed', 'paid', 'shipped', 'delivered'])[1 + g % 4],
       round((10 + (g * 37) % 500)::numeric + 0.99, 2),
       jsonb_build_array(jsonb_build_object('sku', 'SKU-' || (g % 97), 'qty', 1 + g % 3)),
       timestamptz '2026-01-01 00:00:00+00' + g * interval '7 minutes'
FROM generate_series(1, 100000) g;
ANALYZE shop.customers, shop.orders;
