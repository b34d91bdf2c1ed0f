#!/usr/bin/env bash
# Installs every client that run.sh drives, the S3/SQS server of the
# snapshot tests and the deployment files' linters, into a cache folder outside the
# repository. Idempotent: each part records a hash of what it was installed
# from, and a second run skips every part whose inputs did not change.
#
#   PGACCEL_CLIENTS_DIR   where to install (default ~/.cache/pgaccel-clients)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${PGACCEL_CLIENTS_DIR:-$HOME/.cache/pgaccel-clients}"
JDBC_JAR=/usr/share/java/postgresql.jar
mkdir -p "$DIR"

log() { printf 'setup: %s\n' "$*"; }

# The hash of the given files' contents: a part is reinstalled when it changes.
inputs_hash() { cat "$@" | sha256sum | cut -d' ' -f1; }

# True when the stamp file holds the given hash (the part is up to date).
stamp_matches() { [[ -f "$1" && "$(cat "$1")" == "$2" ]]; }

setup_python() {
    local venv="$DIR/venv" stamp="$DIR/venv/.pgaccel-stamp" want
    want="$(inputs_hash "$HERE/requirements.txt")"
    if stamp_matches "$stamp" "$want" && "$venv/bin/python" -c 'import psycopg, psycopg2, sqlalchemy, pandas, asyncpg' 2>/dev/null; then
        log "python venv up to date ($venv)"
        return
    fi
    log "installing the Python clients into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
    "$venv/bin/pip" freeze --disable-pip-version-check > "$venv/pgaccel-freeze.txt"
    echo "$want" > "$stamp"
}

setup_node() {
    local dest="$DIR/node" stamp="$DIR/node/.pgaccel-stamp" want
    want="$(inputs_hash "$HERE/package.json" "$HERE/package-lock.json")"
    if stamp_matches "$stamp" "$want" && [[ -f "$dest/node_modules/pg/package.json" ]]; then
        log "node-postgres up to date ($dest)"
        return
    fi
    log "installing node-postgres into $dest"
    mkdir -p "$dest"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$dest/"
    # npm ci installs exactly the versions of the committed lock file.
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$stamp"
}

setup_jdbc_driver() {
    if [[ -f "$JDBC_JAR" ]]; then
        log "pgjdbc present ($JDBC_JAR)"
        return
    fi
    log "installing pgjdbc (libpostgresql-jdbc-java)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpostgresql-jdbc-java >/dev/null
}

# Installs the requirements file $2 into the venv $DIR/$1, unless its stamp
# matches and each program named after them is there.
setup_venv() {
    local name="$1" requirements="$HERE/$2"
    shift 2
    local venv="$DIR/$name" stamp="$DIR/$name/.pgaccel-stamp" want program present=1
    want="$(inputs_hash "$requirements")"
    for program in "$@"; do
        [[ -x "$venv/bin/$program" ]] || present=0
    done
    if stamp_matches "$stamp" "$want" && (( present )); then
        log "$name up to date ($venv)"
        return
    fi
    log "installing $* into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
}

# moto_server: one loopback port speaking S3 (conditional GET and PUT) and
# SQS, for the snapshot tests.
setup_moto() { setup_venv moto moto-requirements.txt moto_server; }

# hadolint and kubernetes-validate, for the deployment files.
setup_deploy_lint() { setup_venv deploy-lint deploy-lint-requirements.txt hadolint kubernetes-validate; }

setup_java_check() {
    local classes="$DIR/java" stamp="$DIR/java/.pgaccel-stamp" want
    # The jar is part of the inputs: an upgraded driver recompiles the check.
    want="$(inputs_hash "$HERE/CheckJdbc.java" "$JDBC_JAR")"
    if stamp_matches "$stamp" "$want" && [[ -f "$classes/CheckJdbc.class" ]]; then
        log "Java check classes up to date ($classes)"
        return
    fi
    log "compiling CheckJdbc.java into $classes"
    rm -rf "$classes"
    mkdir -p "$classes"
    javac -Xlint:all -Werror -cp "$JDBC_JAR" -d "$classes" "$HERE/CheckJdbc.java"
    echo "$want" > "$stamp"
}

setup_go() {
    # Debian's Go is too old for pgx and the module proxy is out of reach here,
    # so nothing is installed; check_go.sh skips itself when go is absent.
    if command -v go >/dev/null; then
        log "go found ($(go version)); check_go.sh decides what it can run"
    else
        log "go not installed: the Go/pgx check will be skipped"
    fi
}

setup_python
setup_moto
setup_deploy_lint
setup_node
setup_jdbc_driver
setup_java_check
setup_go
log "done: clients in $DIR"
