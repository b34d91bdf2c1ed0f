#!/usr/bin/env bash
# Replays every block of the recorded client query files against a PostgreSQL-wire
# server and reports each block that fails, by its '-- query:' line.
#
#   validate.sh DSN [--schema S] [--table T] [--setup] [FILE.sql ...]
#
# DSN        libpq connection string or URI, e.g. 'host=127.0.0.1 port=5432 user=postgres dbname=test'
# --schema   value of {schema} (default: cq_validate)
# --table    value of {table}  (default: items); a table with primary key id and the columns
#            amount numeric(12,2), name varchar(40) not null, created timestamptz
# --setup    create {schema}.{table} (with a table comment) before the run and drop the schema
#            after it; for a real PostgreSQL. Without it the table must already exist.
# FILE.sql   files to replay (default: every *.sql beside this script)
#
# {database} and {user} are taken from the server (current_database(), current_user).
# Each block runs in its own psql session. A block with '-- params:' runs as
# PREPARE ... ; EXECUTE ...(params) (psql 15 has no \bind). A block passes when it runs
# without error and its result columns are exactly the '-- reads:' list, in order.
# Needs: bash, psql, python3 (standard library only).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
[ $# -ge 1 ] || { sed -n '2,20p' "$0"; exit 2; }
dsn="$1"; shift
schema=cq_validate; table=items; setup=0; files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --schema) schema="$2"; shift 2 ;;
    --table) table="$2"; shift 2 ;;
    --setup) setup=1; shift ;;
    *) files+=("$1"); shift ;;
  esac
done
[ ${#files[@]} -gt 0 ] || files=("$here"/*.sql)
if [ "$setup" = 1 ]; then
  psql "$dsn" -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS "$schema" CASCADE;
CREATE SCHEMA "$schema";
CREATE TABLE "$schema"."$table" (id int4 PRIMARY KEY, amount numeric(12,2), name varchar(40) NOT NULL, created timestamptz);
COMMENT ON TABLE "$schema"."$table" IS 'client query replay table';
INSERT INTO "$schema"."$table" VALUES (1, 12.50, 'a', now()), (2, NULL, 'b', NULL);
SQL
  trap 'psql "$dsn" -X -q -c "SET client_min_messages = warning" -c "DROP SCHEMA IF EXISTS \"$schema\" CASCADE" >/dev/null' EXIT
fi
python3 - "$dsn" "$schema" "$table" "${files[@]}" <<'PY'
import csv, io, os, subprocess, sys
dsn, schema, table, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
PSQL = ['psql', dsn, '-X', '-q', '--csv', '-v', 'ON_ERROR_STOP=1']
def run(args):
    return subprocess.run(PSQL + args, capture_output=True, text=True, timeout=120)
r = run(['-t', '-c', 'select current_database(), current_user'])
if r.returncode: sys.exit('cannot connect: ' + r.stderr.strip())
database, user = next(csv.reader(io.StringIO(r.stdout)))
def fill(s):
    return (s.replace('{schema}', schema).replace('{table}', table)
             .replace('{database}', database).replace('{user}', user))
def split_params(line):
    """comma-separated; a value in single quotes may hold commas ('' is a quote); NULL is null"""
    out, i, n = [], 0, len(line)
    while i <= n:
        while i < n and line[i] == ' ': i += 1
        if i < n and line[i] == "'":
            j, buf = i + 1, []
            while True:
                if line[j] == "'" and j + 1 < n and line[j+1] == "'": buf.append("'"); j += 2
                elif line[j] == "'": j += 1; break
                else: buf.append(line[j]); j += 1
            out.append(''.join(buf)); i = line.find(',', j)
            i = n + 1 if i < 0 else i + 1
        else:
            j = line.find(',', i); j = n if j < 0 else j
            v = line[i:j].strip(); out.append(None if v == 'NULL' else v); i = j + 1
    return out
def blocks(path):
    cur = None
    for raw in open(path, encoding='utf-8'):
        line = raw.rstrip('\n')
        if cur is None:
            if line.startswith('-- query:'):
                cur = {'query': line[9:].strip(), 'reads': None, 'params': None, 'sql': [], 'in_sql': False}
            continue
        if not cur['in_sql'] and line.startswith('-- ') and line.split(':', 1)[0][3:] in ('source', 'reads', 'params', 'note'):
            key, val = line[3:].split(':', 1)
            if key == 'reads': cur['reads'] = [c.strip() for c in val.split(',')] if val.strip() else []
            if key == 'params': cur['params'] = split_params(val.strip())
            continue
        if line.strip() == ';;':
            yield cur; cur = None; continue
        cur['in_sql'] = True; cur['sql'].append(line)
    if cur is not None:
        raise SystemExit('%s: block %r has no closing ;;' % (path, cur['query']))
total = failed = 0
for path in files:
    name = os.path.basename(path)
    for b in blocks(path):
        total += 1
        sql = fill('\n'.join(b['sql']))
        if b['params'] is not None:
            vals = ', '.join('NULL' if p is None else "'" + fill(p).replace("'", "''") + "'" for p in b['params'])
            r = run(['-c', 'PREPARE cq_stmt AS ' + sql, '-c', 'EXECUTE cq_stmt' + ('(%s)' % vals if b['params'] else '')])
        else:
            r = run(['-c', sql])
        err = None
        if r.returncode:
            err = (r.stderr.strip().splitlines() or ['exit %d' % r.returncode])[0]
        else:
            cols = next(csv.reader(io.StringIO(r.stdout)), []) if r.stdout.strip() else []
            if b['reads'] is not None and cols != b['reads']:
                err = 'columns %s, expected %s' % (cols, b['reads'])
        if err:
            failed += 1
            print('FAIL %s: %s\n     %s' % (name, b['query'], err))
print('%d passed, %d failed' % (total - failed, failed))
sys.exit(1 if failed else 0)
PY
