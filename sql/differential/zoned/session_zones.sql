-- Queries whose answers depend on the session's TimeZone: each runs under
-- several zones (see `differential::timestamptz_reads_the_session_clock`).
SELECT id, tstz::timestamp, tstz::date, tstz::time, ts::timestamptz, d::timestamptz FROM times ORDER BY id;
SELECT id, extract(hour from tstz), extract(day from tstz), date_part('dow', tstz), extract(epoch from tstz), date_part('minute', tstz) FROM times ORDER BY id;
SELECT id, to_char(tstz, 'YYYY-MM-DD HH24:MI TZ'), date_trunc('day', tstz), date_trunc('month', tstz)::date FROM times ORDER BY id;
SELECT id, placed::date, placed::timestamp(0), CAST(placed AS time) FROM orders WHERE id < 6 ORDER BY id;
SELECT CAST(placed AS date) AS day, count(*) FROM orders GROUP BY 1 ORDER BY 1 LIMIT 5;
SELECT extract(dow from placed) AS dow, count(*) FROM orders GROUP BY 1 ORDER BY 1;
SELECT extract(hour from placed) AS h, count(*) FROM orders GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM orders WHERE placed >= date '2024-01-02';
SELECT count(*) FROM orders WHERE placed >= timestamp '2024-01-02 00:00';
SELECT count(*) FROM orders WHERE placed >= '2024-01-02';
SELECT count(*) FROM orders WHERE placed >= '2024-01-02 00:00:00+00';
SELECT count(*) FROM orders WHERE placed::date = date '2024-01-02';
SELECT count(*) FROM orders WHERE placed BETWEEN '2024-01-02' AND '2024-01-03 12:00';
SELECT id FROM times WHERE tstz > ts ORDER BY id;
SELECT id, tstz = ts, d < tstz, d::timestamptz FROM times WHERE id <> 7 ORDER BY id;
SELECT timestamp '2024-03-10 02:30'::timestamptz, timestamp '2024-11-03 01:30'::timestamptz, timestamp '2024-03-31 02:30'::timestamptz;
SELECT '2024-03-10 02:30'::timestamptz, '2024-06-01 12:00'::timestamptz, '2024-06-01 12:00+02'::timestamptz;
SELECT date '2024-01-01' + placed::time FROM orders WHERE id = 1;
SELECT min(placed)::date, max(placed::date), min(placed::timestamp) FROM orders;
SELECT pg_typeof(localtimestamp), localtimestamp - now()::timestamp < interval '1 second', now()::date = current_date;
SELECT id, tstz - interval '1 day', tstz + interval '1 month', tstz - interval '2 hours', interval '1 day' + tstz FROM times ORDER BY id;
SELECT count(*) FROM orders WHERE placed >= timestamptz '2024-03-10 12:00+00' - interval '30 days';
SELECT date_trunc('day', placed + interval '1 day')::date AS next_day, count(*) FROM orders GROUP BY 1 ORDER BY 1 LIMIT 3;
SELECT 'today'::timestamptz = date_trunc('day', now()), 'epoch'::timestamptz, TIMESTAMPTZ 'epoch', 'yesterday'::timestamptz < now(), 'tomorrow'::date - current_date;
SELECT id, tstz > 'epoch', ts > 'epoch', d > 'epoch', tstz < 'today', d < 'tomorrow' FROM times ORDER BY id;
SELECT id, age(tstz), age(ts), age(d) FROM times ORDER BY id;
SELECT id, (tstz, interval '1 day') OVERLAPS (timestamptz '2024-03-10 06:00:00+00', interval '1 hour'), (d, interval '1 month') OVERLAPS (tstz, tstz) FROM times ORDER BY id;
