-- The roles the tests and examples connect as (trust authentication).
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'root') THEN
    CREATE ROLE root SUPERUSER LOGIN;
  END IF;
END $$;
