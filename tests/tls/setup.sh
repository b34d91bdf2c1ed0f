#!/usr/bin/env bash
# Serves TLS on the local PostgreSQL and MariaDB with a certificate for
# `localhost` signed by a test CA, for the tests of pgaccel's source TLS
# settings (pg_sslmode / mysql_sslmode with a root certificate). Idempotent:
# the CA is made once, and a server is reconfigured only when it does not
# already use the certificate (MariaDB then restarts; PostgreSQL reloads).
#
#   PGACCEL_TLS_DIR   where the CA and certificate live (default ~/.cache/pgaccel-tls)
set -euo pipefail

DIR="${PGACCEL_TLS_DIR:-$HOME/.cache/pgaccel-tls}"
mkdir -p "$DIR"
log() { printf 'tls setup: %s\n' "$*"; }

if [[ ! -s "$DIR/ca.pem" || ! -s "$DIR/server.pem" || ! -s "$DIR/server.key" ]]; then
    log "making a test CA and a certificate for localhost in $DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=pgaccel source test CA" \
        -keyout "$DIR/ca.key" -out "$DIR/ca.pem" 2>/dev/null
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" \
        -keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null
    printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n' > "$DIR/server.ext"
    openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
        -CAcreateserial -days 3650 -extfile "$DIR/server.ext" -out "$DIR/server.pem" 2>/dev/null
fi

# PostgreSQL reads its certificate again on reload.
PG_DIR=/var/lib/postgresql/pgaccel-tls
pg() { psql -h 127.0.0.1 -U postgres -d test -Atqc "$1"; }
if [[ "$(pg 'SHOW ssl_cert_file')" != "$PG_DIR/server.pem" || "$(pg 'SHOW ssl')" != on ]] \
    || ! cmp -s "$DIR/server.pem" "$PG_DIR/server.pem"; then
    log "PostgreSQL: TLS with $PG_DIR/server.pem"
    install -d -o postgres -g postgres -m 700 "$PG_DIR"
    install -o postgres -g postgres -m 644 "$DIR/server.pem" "$PG_DIR/server.pem"
    install -o postgres -g postgres -m 600 "$DIR/server.key" "$PG_DIR/server.key"
    pg "ALTER SYSTEM SET ssl_cert_file = '$PG_DIR/server.pem'"
    pg "ALTER SYSTEM SET ssl_key_file = '$PG_DIR/server.key'"
    pg "ALTER SYSTEM SET ssl = on"
    pg "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 1 30); do
        [[ "$(pg 'SHOW ssl_cert_file')" == "$PG_DIR/server.pem" ]] && break
        sleep 0.2
    done
fi

# MariaDB reads its certificate paths at startup only.
MY_DIR=/etc/mysql/pgaccel-tls
MY_CNF=/etc/mysql/my.cnf
# shellcheck source=../support/mariadb.sh
source "$(dirname "$0")/../support/mariadb.sh"
my() { mariadb -h 127.0.0.1 -P 3306 -u root -N -B -e "$1"; }
if [[ "$(my "SELECT @@have_ssl")" != YES || "$(my "SELECT @@ssl_cert")" != "$MY_DIR/server.pem" ]] \
    || ! cmp -s "$DIR/server.pem" "$MY_DIR/server.pem"; then
    log "MariaDB: TLS with $MY_DIR/server.pem (restarting it)"
    install -d -m 755 "$MY_DIR"
    install -o mysql -g mysql -m 644 "$DIR/server.pem" "$MY_DIR/server.pem"
    install -o mysql -g mysql -m 600 "$DIR/server.key" "$MY_DIR/server.key"
    install -o mysql -g mysql -m 644 "$DIR/ca.pem" "$MY_DIR/ca.pem"
    if ! grep -q '^# pgaccel-tls' "$MY_CNF"; then
        printf '\n# pgaccel-tls: TLS for the source TLS tests (tests/tls/setup.sh)\n[mariadbd]\nssl_cert = %s/server.pem\nssl_key = %s/server.key\nssl_ca = %s/ca.pem\n' \
            "$MY_DIR" "$MY_DIR" "$MY_DIR" >> "$MY_CNF"
    fi
    restart_mariadb
    [[ "$(my "SELECT @@have_ssl")" == YES ]] || { echo "MariaDB did not enable TLS" >&2; exit 1; }
fi
log "done: CA $DIR/ca.pem"
