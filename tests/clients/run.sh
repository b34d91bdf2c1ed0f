#!/usr/bin/env bash
# Runs the client compatibility checks against one server.
#
#   CLIENT_DSN     libpq keyword/value string, e.g.
#                  'host=127.0.0.1 port=5432 user=postgres dbname=test'
#   CLIENT_SCHEMA  the schema that holds the fixture tables (fixture.sql)
#   CLIENT_TARGET  postgres (default) or pgaccel: pgaccel adds the
#                  read-replica assertions (25006 on writes, read only)
#   PGACCEL_CLIENTS_DIR  where setup.sh installed the clients
#
#   ./run.sh              every check
#   ./run.sh NAME...      only those, e.g. ./run.sh psycopg3 jdbc
#   ./run.sh --list       the names
#
# Exits non-zero when a check fails, and names the failed ones.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${PGACCEL_CLIENTS_DIR:-$HOME/.cache/pgaccel-clients}"
JDBC_JAR=/usr/share/java/postgresql.jar
CHECKS=(psycopg3 psycopg2 sqlalchemy-psycopg2 sqlalchemy-psycopg asyncpg node jdbc pgbench go)

usage() {
    sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit "$1"
}

# Sets CMD to the command line of one check; fails for an unknown name.
check_command() {
    local py="$DIR/venv/bin/python"
    case "$1" in
        psycopg3) CMD=("$py" "$HERE/check_psycopg3.py") ;;
        psycopg2) CMD=("$py" "$HERE/check_psycopg2.py") ;;
        sqlalchemy-psycopg2) CMD=("$py" "$HERE/check_sqlalchemy.py" psycopg2) ;;
        sqlalchemy-psycopg) CMD=("$py" "$HERE/check_sqlalchemy.py" psycopg) ;;
        asyncpg) CMD=("$py" "$HERE/check_asyncpg.py") ;;
        node) CMD=(node "$HERE/check_node.js") ;;
        jdbc) CMD=(java -cp "$DIR/java:$JDBC_JAR" CheckJdbc) ;;
        pgbench) CMD=(bash "$HERE/check_pgbench.sh") ;;
        go) CMD=(bash "$HERE/check_go.sh") ;;
        *) return 1 ;;
    esac
}

# Prints why a check cannot run (its client is missing or out of date), or nothing.
missing_client() {
    case "$1" in
        psycopg3|psycopg2|sqlalchemy-*|asyncpg)
            [[ -x "$DIR/venv/bin/python" ]] || echo "no Python venv in $DIR/venv" ;;
        node)
            [[ -f "$DIR/node/node_modules/pg/package.json" ]] || echo "no node-postgres in $DIR/node" ;;
        jdbc)
            # setup.sh stamps the classes with a hash of the source and the jar.
            local want
            want="$(cat "$HERE/CheckJdbc.java" "$JDBC_JAR" 2>/dev/null | sha256sum | cut -d' ' -f1)"
            [[ -f "$JDBC_JAR" && "$(cat "$DIR/java/.pgaccel-stamp" 2>/dev/null)" == "$want" ]] ||
                echo "CheckJdbc is not compiled, or CheckJdbc.java or $JDBC_JAR changed since" ;;
    esac
}

# Expands "sqlalchemy" and rejects unknown names.
selected_checks() {
    local name
    if [[ $# -eq 0 ]]; then
        printf '%s\n' "${CHECKS[@]}"
        return
    fi
    for name in "$@"; do
        case "$name" in
            sqlalchemy) printf '%s\n' sqlalchemy-psycopg2 sqlalchemy-psycopg ;;
            *)
                if ! check_command "$name"; then
                    echo "run.sh: unknown check '$name' (one of: ${CHECKS[*]} sqlalchemy)" >&2
                    exit 2
                fi
                echo "$name"
                ;;
        esac
    done
}

prepare_environment() {
    : "${CLIENT_DSN:?set CLIENT_DSN, e.g. 'host=127.0.0.1 port=5432 user=postgres dbname=test'}"
    : "${CLIENT_SCHEMA:?set CLIENT_SCHEMA to the schema holding the fixture tables}"
    export CLIENT_TARGET="${CLIENT_TARGET:-postgres}"
    if [[ "$CLIENT_TARGET" != postgres && "$CLIENT_TARGET" != pgaccel ]]; then
        echo "run.sh: CLIENT_TARGET must be postgres or pgaccel, not '$CLIENT_TARGET'" >&2
        exit 2
    fi
    local urls
    urls="$(python3 "$HERE/dsn.py" "$CLIENT_DSN")" || exit 2
    eval "$urls"
    export CLIENT_DSN CLIENT_SCHEMA CLIENT_URL CLIENT_JDBC_URL
    export NODE_PATH="$DIR/node/node_modules"
    export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONDONTWRITEBYTECODE=1  # keep __pycache__ out of the repository
    export PYTHONUNBUFFERED=1
}

main() {
    case "${1:-}" in
        -h|--help) usage 0 ;;
        --list) printf '%s\n' "${CHECKS[@]}" sqlalchemy; exit 0 ;;
    esac
    local names name failed=() started elapsed missing CMD
    names="$(selected_checks "$@")" || exit 2
    prepare_environment
    echo "client checks: target=$CLIENT_TARGET schema=$CLIENT_SCHEMA dsn='$CLIENT_DSN'"
    for name in $names; do
        echo "=== $name"
        started=$SECONDS
        missing="$(missing_client "$name")"
        check_command "$name"
        if [[ -n "$missing" ]]; then
            echo "FAIL $name: $missing: run $HERE/setup.sh"
            failed+=("$name")
        elif ! "${CMD[@]}"; then
            failed+=("$name")
            echo "--- $name FAILED"
        fi
        elapsed=$((SECONDS - started))
        echo "--- $name took ${elapsed}s"
    done
    local total count_failed
    total=$(wc -w <<<"$names")
    count_failed=${#failed[@]}
    echo
    if [[ $count_failed -gt 0 ]]; then
        echo "failed checks: ${failed[*]}"
    fi
    echo "clients: $((total - count_failed)) passed, $count_failed failed"
    [[ $count_failed -eq 0 ]]
}

main "$@"
