#!/usr/bin/env bash
# Start a private PostgreSQL 15 primary with a streaming-replication standby (Debian's
# package, the binaries scripts/servers/postgres uses) for the failover tests, on 127.0.0.1:
# node n1 on ${CHATMEM_POSTGRES_STANDBY_PORT:-25451} (the primary of a fresh topology), node
# n2 on the port after it (cloned from n1 with pg_basebackup -R). Role test/test (SUPERUSER),
# database testdb. The URL names both nodes; libpq connects to whichever accepts writes:
#   postgresql+psycopg://test:test@127.0.0.1:25451,127.0.0.1:25452/testdb?target_session_attrs=read-write
#
# Replication is asynchronous unless the argument is "sync" (or CHATMEM_POSTGRES_STANDBY_MODE=sync):
# then every commit waits until the standby has its WAL. mode.sh switches a running topology.
#
# If a primary and its streaming standby already answer (either node may be the primary after
# a failover), they are kept and only the mode is set; otherwise the topology starts FRESH
# (old data under $CHATMEM_SERVERS_RUN/postgres-standby is wiped).
#
# Usage: scripts/servers/postgres-standby/start.sh [sync|async]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

MODE=${1:-${CHATMEM_POSTGRES_STANDBY_MODE:-async}}
[[ $MODE == sync || $MODE == async ]] || fail "unknown mode $MODE (sync or async)"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

mkdir -p "$RUN"
lock_file "$RUN/.lock"

[[ -x $BIN/postgres ]] || apt_install postgresql-15 postgresql-client-15
command -v psql >/dev/null || apt_install postgresql-client-15

if healthy; then
  set_mode "$MODE"
  echo "postgres-standby: already running, primary $(primary), $MODE replication ($URL)"
  exit 0
fi

# Whatever we started earlier is not a healthy pair: stop it and start again from nothing.
for node in "${NODES[@]}"; do
  stop_node "$node"
  rm -rf "${RUN:?}/$node"
  mkdir -p "$RUN/$node"
  chown postgres:postgres "$RUN/$node"
done
rm -f "$RUN/mode"

# Local socket connections (setup and pg_basebackup, as OS user postgres) are trusted; TCP
# needs a password. --no-sync: throwaway data.
as_pg "$BIN/initdb" -D "$RUN/n1/data" -U postgres -E UTF8 --locale=C.UTF-8 \
  --auth-local=trust --auth-host=scram-sha-256 --no-sync >"$RUN/n1/initdb.log" 2>&1 \
  || { cat "$RUN/n1/initdb.log" >&2; fail "initdb failed"; }
# The standby gets these with its copy of the data directory.
printf '%s\n' "max_connections = 200" "shared_buffers = 64MB" >>"$RUN/n1/data/postgresql.conf"
start_node n1
as_pg psql -h "$RUN/n1" -p "$(port_of n1)" -U postgres -d postgres -XqtA -v ON_ERROR_STOP=1 \
  >/dev/null <<'SQL' || fail "creating role/database failed"
CREATE ROLE test LOGIN SUPERUSER PASSWORD 'test';
CREATE DATABASE testdb OWNER test;
SQL
clone n2 n1
wait_streaming n1
set_mode "$MODE"
healthy || fail "started, but the pair is not healthy"
echo "postgres-standby: ready, primary n1, standby n2, $MODE replication (fresh data, $(elapsed)) $URL"
