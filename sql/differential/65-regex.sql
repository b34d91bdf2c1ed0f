-- Pattern matching: LIKE, ILIKE, SIMILAR TO, POSIX regular expressions.
SELECT id, t LIKE 'h%', t ILIKE 'H%', t NOT LIKE '%o%', v LIKE 'a\_b%' FROM texts ORDER BY id;
SELECT id, t ~ '^[a-z]+$', t ~* 'WORLD', t !~ 'l', t !~* 'L' FROM texts ORDER BY id;
SELECT id, regexp_replace(t, '[aeiou]', '*', 'g'), regexp_replace(t, 'l+', 'L') FROM texts ORDER BY id;
SELECT id, substring(t FROM '[0-9a-z]+'), substring(t FROM 2 FOR 3) FROM texts ORDER BY id;
SELECT id, regexp_match(t, '(\w)(\w)'), regexp_matches(t, 'l', 'g') FROM texts WHERE t ~ 'l' ORDER BY id;
SELECT id, split_part(t, ',', 2), split_part(t, ' ', 1) FROM texts ORDER BY id;
SELECT id, t SIMILAR TO '%(lo|la)%', t SIMILAR TO 'h%' FROM texts ORDER BY id;
SELECT id, position('l' IN t), strpos(t, 'o'), t LIKE '%' FROM texts ORDER BY id;
SELECT 'abc' LIKE 'a_c', 'abc' LIKE 'A%', 'ABC' ILIKE 'a%', '100%' LIKE '100\%', 'a.c' ~ 'a\.c';
SELECT regexp_replace('2024-02-29', '(\d+)-(\d+)-(\d+)', '\3/\2/\1'), regexp_split_to_array('a1b22c', '\d+');
SELECT id, regexp_count(t, 'l'), regexp_instr(t, 'o') FROM texts ORDER BY id;
SELECT id, t ~ '\s', v ~ '^[A-Z]', c ~ '^.$' FROM texts ORDER BY id;
SELECT count(*) FROM orders WHERE status LIKE 'p%' OR status ~ 'ed$';
SELECT name FROM customers WHERE name ~ '1$' ORDER BY name;
SELECT id FROM texts WHERE t LIKE '%\_%' ESCAPE '\' ORDER BY id;
SELECT id FROM texts WHERE v LIKE 'a#_b%' ESCAPE '#' ORDER BY id;
