#!/usr/bin/env bash
# Turns on logical decoding on the local PostgreSQL, for the tests of
# `refresh_mode: changes`: `wal_level = logical` (read only at startup, so
# PostgreSQL restarts, once) and room for the tests' replication slots.
# Idempotent: nothing changes when the settings are already there.
set -euo pipefail

log() { printf 'cdc setup: %s\n' "$*"; }
pg() { psql -h 127.0.0.1 -U postgres -d test -Atqc "$1"; }

if [[ "$(pg 'SHOW wal_level')" != logical ]]; then
    log "PostgreSQL: wal_level = logical (restarting it)"
    pg "ALTER SYSTEM SET wal_level = logical"
    pg "ALTER SYSTEM SET max_replication_slots = 64"
    pg "ALTER SYSTEM SET max_wal_senders = 64"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main restart
    for _ in $(seq 1 60); do
        pg_isready -h 127.0.0.1 -p 5432 -q && break
        sleep 1
    done
    [[ "$(pg 'SHOW wal_level')" == logical ]] || { log "wal_level is still not logical" >&2; exit 1; }
fi
