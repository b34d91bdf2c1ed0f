-- Window functions.
SELECT id, row_number() OVER (ORDER BY amount DESC, id) FROM orders ORDER BY id LIMIT 10;
SELECT id, rank() OVER (ORDER BY qty), dense_rank() OVER (ORDER BY qty) FROM orders ORDER BY id LIMIT 10;
SELECT id, sum(amount) OVER (PARTITION BY status ORDER BY id) FROM orders ORDER BY id LIMIT 10;
SELECT id, sum(qty) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders ORDER BY id LIMIT 10;
SELECT id, avg(amount) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM orders ORDER BY id LIMIT 10;
SELECT id, count(*) OVER (ORDER BY placed RANGE BETWEEN interval '1 day' PRECEDING AND CURRENT ROW) FROM orders ORDER BY id LIMIT 10;
SELECT id, lag(amount) OVER (ORDER BY id), lead(amount, 2) OVER (ORDER BY id) FROM orders ORDER BY id LIMIT 10;
SELECT id, first_value(id) OVER (PARTITION BY status ORDER BY id), last_value(id) OVER (PARTITION BY status ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM orders ORDER BY id LIMIT 10;
SELECT id, ntile(4) OVER (ORDER BY id), percent_rank() OVER (ORDER BY qty), cume_dist() OVER (ORDER BY qty) FROM orders ORDER BY id LIMIT 10;
SELECT status, id, nth_value(id, 2) OVER (PARTITION BY status ORDER BY id) FROM orders WHERE id < 20 ORDER BY status, id;
SELECT id, sum(qty) OVER w, max(qty) OVER w FROM orders WINDOW w AS (PARTITION BY status ORDER BY id) ORDER BY id LIMIT 10;
SELECT id, avg(qty) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), max(qty) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING) FROM orders ORDER BY id LIMIT 6;
SELECT id, sum(amount) OVER (PARTITION BY status ORDER BY id ROWS UNBOUNDED PRECEDING) FROM orders WHERE id < 9 ORDER BY id;
