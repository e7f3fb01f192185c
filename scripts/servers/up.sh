#!/usr/bin/env bash
# Start every test server the suite needs, in parallel where the machine allows, and write
# their URLs to $CHATMEM_SERVERS_RUN/urls.env (source it to point the tests at them).
#
# Usage: scripts/servers/up.sh [name...]   (default: all eleven)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

all=(postgres mariadb redis redis-cluster redis-sentinel postgres-standby ferretdb cassandra cassandra-ring neo4j toxiproxy)
names=("${@:-${all[@]}}")
logdir=$CHATMEM_SERVERS_RUN/logs
mkdir -p "$logdir"

# Debian's servers start in well under a second each (the six-node Redis Cluster in a few
# seconds: redis-cli waits for the nodes to agree; the Sentinel topology in a few too: the
# sentinels find each other by hello messages every 2 s) and share one apt run, so start them
# first and in order; the slow ones (JVMs, the FerretDB and Toxiproxy builds, and the
# PostgreSQL primary with its standby: a base backup and two servers, a few seconds, on the
# binaries the single server installed) then start side by side.
declare -A pids=() began=()
fast=() slow=()
for name in "${names[@]}"; do
  case $name in
    postgres | mariadb | redis | redis-cluster | redis-sentinel) fast+=("$name") ;;
    *) slow+=("$name") ;;
  esac
done
status=0
for name in "${fast[@]}"; do
  t0=$(date +%s)
  if ! "$here/$name/start.sh" >"$logdir/$name.log" 2>&1; then
    echo "FAILED to start $name; log:" >&2
    tail -n 40 "$logdir/$name.log" >&2
    status=1
  fi
  echo "$name: up in $(($(date +%s) - t0)) s"
done
for name in "${slow[@]}"; do
  began[$name]=$(date +%s)
  "$here/$name/start.sh" >"$logdir/$name.log" 2>&1 &
  pids[$name]=$!
done
for name in "${slow[@]}"; do
  if wait "${pids[$name]}"; then
    echo "$name: up in $(($(date +%s) - began[$name])) s"
  else
    echo "FAILED to start $name; log:" >&2
    tail -n 60 "$logdir/$name.log" >&2
    status=1
  fi
done

# Every default port lies outside the kernel's ephemeral range (32768-60999 on Linux): a
# port inside it can be taken by any client connection's local end, and a server that starts
# or restarts on it then fails to bind (tests/meta/test_server_ports.py checks the defaults).
cat >"$CHATMEM_SERVERS_RUN/urls.env" <<URLS
export CHATMEM_TEST_POSTGRESQL_URL=postgresql+psycopg://test:test@127.0.0.1:${CHATMEM_POSTGRES_PORT:-25432}/testdb
export CHATMEM_TEST_POSTGRESQL_STANDBY_URL='postgresql+psycopg://test:test@127.0.0.1:${CHATMEM_POSTGRES_STANDBY_PORT:-25451},127.0.0.1:$((${CHATMEM_POSTGRES_STANDBY_PORT:-25451} + 1))/testdb?target_session_attrs=read-write'
export CHATMEM_TEST_MARIADB_URL='mysql+pymysql://test:test@127.0.0.1:${CHATMEM_MARIADB_PORT:-23306}/testdb?charset=utf8mb4'
export CHATMEM_TEST_REDIS_URL=redis://127.0.0.1:${CHATMEM_REDIS_PORT:-63799}/0
export CHATMEM_TEST_REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:${CHATMEM_REDIS_CLUSTER_PORT:-7101},127.0.0.1:$((${CHATMEM_REDIS_CLUSTER_PORT:-7101} + 1)),127.0.0.1:$((${CHATMEM_REDIS_CLUSTER_PORT:-7101} + 2))
export CHATMEM_TEST_REDIS_SENTINEL_URL=redis+sentinel://127.0.0.1:${CHATMEM_REDIS_SENTINELS_PORT:-26401},127.0.0.1:$((${CHATMEM_REDIS_SENTINELS_PORT:-26401} + 1)),127.0.0.1:$((${CHATMEM_REDIS_SENTINELS_PORT:-26401} + 2))/chatmem/0
export CHATMEM_TEST_MONGODB_URL=mongodb://127.0.0.1:${CHATMEM_FERRETDB_PORT:-27027}/chatmem_test
export CHATMEM_TEST_CASSANDRA_URL=cassandra://127.0.0.1:${CHATMEM_CASSANDRA_PORT:-9042}/chatmem_test
export CHATMEM_TEST_CASSANDRA_RING_URL='cassandra://127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042/chatmem_ring?create_keyspace=true&replication_factor=3'
export CHATMEM_TEST_NEO4J_URL=bolt://127.0.0.1:${CHATMEM_NEO4J_PORT:-7687}
export CHATMEM_TEST_TOXIPROXY_URL=http://127.0.0.1:${CHATMEM_TOXIPROXY_PORT:-8474}
URLS
exit $status
