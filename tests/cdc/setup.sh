#!/usr/bin/env bash
# Turns on the change streams the tests of `refresh_mode: changes` read:
# logical decoding on the local PostgreSQL (`wal_level = logical`, and room
# for the tests' replication slots) and a row-based binlog on the local
# MariaDB (`log_bin`, `binlog_format = ROW`, full row images). Both are read
# at startup only, so each server restarts, once. Idempotent: nothing
# changes when the settings are already there.
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

# shellcheck source=../support/mariadb.sh
source "$(dirname "$0")/../support/mariadb.sh"
MY_CNF=/etc/mysql/my.cnf
my() { mariadb -h 127.0.0.1 -P 3306 -u root -N -B -e "$1"; }
if [[ "$(my 'SELECT @@log_bin, @@binlog_format, @@binlog_row_image')" != "$(printf '1\tROW\tFULL')" ]]; then
    log "MariaDB: a row-based binlog (restarting it)"
    if ! grep -q '^# pgaccel-cdc' "$MY_CNF"; then
        printf '\n# pgaccel-cdc: the row binlog the change-stream tests read (tests/cdc/setup.sh)\n[mariadbd]\nlog_bin = pgaccel-binlog\nbinlog_format = ROW\nbinlog_row_image = FULL\nserver_id = 1\nexpire_logs_days = 1\n' >> "$MY_CNF"
    fi
    restart_mariadb
    [[ "$(my 'SELECT @@log_bin, @@binlog_format')" == "$(printf '1\tROW')" ]] \
        || { log "MariaDB's binlog is still not row-based" >&2; exit 1; }
fi
