-- MariaDB starts with database `test` (MARIADB_DATABASE); the tests create
-- and drop their own databases, so nothing else is needed yet.
SELECT 1;
