#!/usr/bin/env bash
# pgbench: a point lookup on orders in the simple, extended and prepared
# query modes, 2 clients x 200 transactions each; every run must process all
# 400 transactions with none failed. A last run checks the values it reads
# (\gset and \if) and aborts a client on a wrong one.
set -uo pipefail

: "${CLIENT_DSN:?}" "${CLIENT_SCHEMA:?}"
PGBENCH="${PGBENCH:-/usr/bin/pgbench}"
CLIENTS=2
TRANSACTIONS=200
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failed_groups=()
groups=0

cat > "$WORK/lookup.sql" <<EOF
\set id random(1, 1000)
SELECT id, status, total FROM $CLIENT_SCHEMA.orders WHERE id = :id;
EOF

# customer_id is id % 100 (fixture.sql); a missing row fails the \gset.
cat > "$WORK/verify.sql" <<EOF
\set id random(1, 1000)
\set expected :id % 100
SELECT customer_id AS got FROM $CLIENT_SCHEMA.orders WHERE id = :id \gset
\if :got != :expected
SELECT 1/0 AS wrong_customer_id;
\endif
EOF

# The value after "label:" in pgbench's summary, e.g. "400/400".
summary_value() {
    sed -n "s/^$2: *\([^ ]*\).*/\1/p" "$1" | head -n 1
}

# run_pgbench TITLE SCRIPT MODE: runs pgbench and asserts its summary.
run_pgbench() {
    local title="$1" script="$2" mode="$3" out="$WORK/out.txt" errors=()
    local expected="$((CLIENTS * TRANSACTIONS))/$((CLIENTS * TRANSACTIONS))"
    groups=$((groups + 1))
    "$PGBENCH" -n -M "$mode" -c "$CLIENTS" -j "$CLIENTS" -t "$TRANSACTIONS" -f "$script" "$CLIENT_DSN" \
        >"$out" 2>&1
    local status=$?
    [[ $status -eq 0 ]] || errors+=("pgbench exited with $status")
    local processed failed
    processed="$(summary_value "$out" "number of transactions actually processed")"
    failed="$(summary_value "$out" "number of failed transactions")"
    [[ "$processed" == "$expected" ]] || errors+=("transactions processed: expected $expected, got '${processed}'")
    [[ "$failed" == "0" ]] || errors+=("failed transactions: expected 0, got '${failed}'")
    if grep -q "aborted" "$out"; then errors+=("a client aborted"); fi
    grep -q "^query mode: $mode\$" "$out" || errors+=("pgbench did not report query mode $mode")
    if [[ ${#errors[@]} -eq 0 ]]; then
        echo "  ok   $title ($processed transactions, $(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$out" | head -n 1) tps)"
    else
        failed_groups+=("$title")
        echo "  FAIL $title"
        printf '       - %s\n' "${errors[@]}"
        sed 's/^/         | /' "$out" | tail -n 25
    fi
}

echo "$("$PGBENCH" --version)"
run_pgbench "point lookup, -M simple" "$WORK/lookup.sql" simple
run_pgbench "point lookup, -M extended" "$WORK/lookup.sql" extended
run_pgbench "point lookup, -M prepared" "$WORK/lookup.sql" prepared
run_pgbench "values checked with \\gset and \\if, -M prepared" "$WORK/verify.sql" prepared

if [[ ${#failed_groups[@]} -gt 0 ]]; then
    echo "FAIL pgbench: ${#failed_groups[@]} of $groups groups failed: ${failed_groups[*]}"
    exit 1
fi
echo "PASS pgbench: $groups groups"
