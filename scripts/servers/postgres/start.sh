#!/usr/bin/env bash
# Start a private PostgreSQL 15 (Debian package) for the tests on
# 127.0.0.1:${CHATMEM_POSTGRES_PORT:-25432}: role test/test (SUPERUSER), database testdb.
#   URL: postgresql+psycopg://test:test@127.0.0.1:25432/testdb
#
# Default: a FRESH cluster (old data under $CHATMEM_SERVERS_RUN/postgres is wiped).
# With --keep-data or CHATMEM_KEEP_DATA=1 an existing valid cluster is reused, so
# stop.sh + start.sh --keep-data simulates "server went away and came back".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

PORT=${CHATMEM_POSTGRES_PORT:-25432}
KEEP=${CHATMEM_KEEP_DATA:-0}
[[ ${1:-} == --keep-data ]] && KEEP=1
RUN=$CHATMEM_SERVERS_RUN/postgres
DATA=$RUN/data
LOG=$RUN/server.log
PIDFILE=$RUN/postgres.pid
BIN=/usr/lib/postgresql/15/bin
URL="postgresql+psycopg://test:test@127.0.0.1:$PORT/testdb"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

as_pg() { runuser -u postgres -- "$@"; }
# A real login as the test user over TCP, the way the tests connect.
answers() {
  PGPASSWORD=test PGCONNECT_TIMEOUT=3 psql -h 127.0.0.1 -p "$PORT" -U test -d testdb \
    -XqtAc 'SELECT 1' 2>/dev/null | grep -qx 1
}
fail() {
  echo "postgres: $*" >&2
  [[ -f $LOG ]] && tail -n 40 "$LOG" >&2
  exit 1
}

mkdir -p "$RUN"
# Serialise concurrent start/stop calls (e.g. several test workers). The server
# must not inherit fd 9, or it would hold the lock forever: see 9>&- below.
exec 9>"$RUN/.lock"
flock 9

if answers; then
  echo "postgres: already running on 127.0.0.1:$PORT ($URL)"
  exit 0
fi

[[ -x $BIN/postgres ]] || apt_install postgresql-15 postgresql-client-15
command -v psql >/dev/null || apt_install postgresql-client-15

# Whatever we started earlier is not answering: stop it before touching its data.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" 9>&- >/dev/null
port_open 127.0.0.1 "$PORT" && fail "127.0.0.1:$PORT is taken by another process"

chown postgres:postgres "$RUN"
if [[ $KEEP == 1 && $(cat "$DATA/PG_VERSION" 2>/dev/null) == 15 ]]; then
  mode="kept data"
  # After a kill -9 the old postmaster lingers as a zombie until this machine's
  # PID 1 reaps it (a second or two), and PostgreSQL refuses to start while the
  # PID in postmaster.pid still exists. Wait for it to go.
  old=$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null || true)
  for ((i = 0; i < 100; i++)); do
    [[ -n $old ]] || break
    kill -0 "$old" 2>/dev/null || break
    sleep 0.1
  done
else
  mode="fresh data"
  rm -rf "$DATA" "$LOG"
  # Local socket connections (used only for setup, as OS user postgres) are trusted;
  # TCP needs a password, as a real deployment would. --no-sync: throwaway data.
  as_pg "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 --no-sync >"$RUN/initdb.log" 2>&1 \
    || { cat "$RUN/initdb.log" >&2; fail "initdb failed"; }
fi

# Settings that trade durability for speed (fine for tests), given on the command
# line so they also apply to a kept cluster. The unix socket goes in our own dir,
# not /var/run/postgresql, so nothing clashes with a system cluster.
opts="-p $PORT -k $RUN -c listen_addresses=127.0.0.1 -c max_connections=300"
opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
opts+=" -c shared_buffers=128MB"
# -w waits until the server accepts connections; the real query check follows.
as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o "$opts" start 9>&- >"$RUN/pg_ctl.log" 2>&1 \
  || { cat "$RUN/pg_ctl.log" >&2; fail "pg_ctl start failed"; }
head -n 1 "$DATA/postmaster.pid" >"$PIDFILE"

# Idempotent setup over the private socket (a kept cluster already has it all).
as_pg psql -h "$RUN" -p "$PORT" -U postgres -d postgres -XqtA -v ON_ERROR_STOP=1 >/dev/null <<'SQL' \
  || fail "creating role/database failed"
SELECT 'CREATE ROLE test LOGIN SUPERUSER PASSWORD ''test'''
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'test') \gexec
SELECT 'CREATE DATABASE testdb OWNER test'
  WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'testdb') \gexec
SQL

answers || fail "server started but test@testdb does not answer"
echo "postgres: ready on 127.0.0.1:$PORT ($mode, $(elapsed)) $URL"
