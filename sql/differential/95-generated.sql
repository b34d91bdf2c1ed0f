-- Queries the random query generator (tests/integration/generator.rs) found
-- answering differently from PostgreSQL, kept as corpus cases.
SELECT t.id::numeric FROM texts t INTERSECT SELECT (0.001 / 3) FROM orders t ORDER BY 1;
SELECT (date_trunc('day', timestamptz '2024-03-10 07:30:00+00') - interval '355 minutes'), t.f8 FROM nums t WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = t.id AND NOT (1.5 < 100.125)) ORDER BY 1, 2;
SELECT (date_trunc('year', timestamptz '2024-03-10 07:30:00+00') - interval '1348 minutes'), (timestamptz '2024-03-10 07:30:00+00' - interval '2113 minutes'), date_trunc('hour', date_trunc('month', timestamp '2000-01-01 00:00:00')) FROM nums t WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = t.id AND NOT (100.125 IS NULL)) ORDER BY 1, 2, 3;
SELECT (t.id / 2), coalesce(t.v, 'none'), ((date '1999-12-31' + 1) - 193) FROM texts t WHERE t.id IN (SELECT s.id FROM orders s WHERE 4865649695::int8 >= -2::int8) ORDER BY 1, 2, 3;
SELECT replace(trim('new'), 'a', 'xy'), t.id::float8, date_trunc('month', t.d::timestamp) FROM times t ORDER BY 1, 2, 3;
SELECT date_trunc('month', (timestamp '2000-01-01 00:00:00' + interval '15 hours')), (abs(t.n) * 1.5), timestamp '2024-03-10 02:30:00' FROM nums t ORDER BY 1, 2, 3 LIMIT 4;
SELECT lower(t.t), 3281847723::int8, ((2155396573::int8 - 850009542::int8) - 969866365::int8), ((43 / 7) / 8) FROM texts t WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = t.id AND 0.5::float8 = (-1.25::float8 * 2.5::float8)) ORDER BY 1, 2, 3, 4;
SELECT 10 FROM times t WHERE date_trunc('month', t.ts) < t.ts UNION SELECT (t.id * -2) FROM times t WHERE (t.d + 16) > (t.d - 21) ORDER BY 1;
SELECT t.status, date_trunc('day', (t.placed - interval '1638 minutes')), timestamptz '2024-06-01 12:00:00+02' FROM orders t WHERE round(t.amount, 1) <> t.amount ORDER BY 1, 2, 3;
SELECT ((t.d + 20) + -24), 3, ((date '2030-06-15' - 272) - 243) FROM times t WHERE t.id NOT IN (SELECT s.id FROM customers s WHERE (0 - s.id) = round(1.5, 3)) ORDER BY 1, 2, 3;
SELECT upper(lower(t.v)), 0.001 FROM texts t WHERE t.id <= (SELECT count(*) FROM orders s) ORDER BY 1, 2;
SELECT trim(t.status) FROM orders t UNION ALL SELECT t.c FROM texts t ORDER BY 1;
SELECT coalesce(t.c, 'none') FROM texts t WHERE (date '1999-12-31' + -37) IS NOT NULL UNION ALL SELECT t.region FROM customers t ORDER BY 1;
SELECT t.i2 FROM nums t UNION ALL SELECT (51 % 2) FROM customers t WHERE (t.id IN (44, 51) AND 4532764026::int8 <> 1188937958::int8) ORDER BY 1;
SELECT t.status, t.status, max(t.id), avg(t.amount) FROM orders t GROUP BY t.status, t.status HAVING count(*) > 1 ORDER BY 1, 2, 3, 4;
SELECT (t.i2 - (t.i4 - t.i4)) FROM nums t WHERE t.id IN (SELECT s.id FROM times s WHERE s.ts > s.d::timestamp) ORDER BY 1;
SELECT t.v FROM texts t UNION ALL SELECT t.region FROM customers t ORDER BY 1;
SELECT 0 FROM customers t EXCEPT SELECT (-2.25 + -2.25) FROM orders t ORDER BY 1;
SELECT abs(t.n) FROM nums t WHERE (t.grp <= t.grp OR date '2030-06-15' <> date '1999-12-31') INTERSECT SELECT (1.5 / 3) FROM texts t ORDER BY 1;
SELECT coalesce(t.id, 4) FROM texts t UNION SELECT abs(t.qty) FROM orders t ORDER BY 1;
SELECT t.t, coalesce(t.c, 'none') FROM texts t WHERE 1e10::float8 <= (1e10::float8 * 2.5::float8) ORDER BY 1, 2 LIMIT 1;
