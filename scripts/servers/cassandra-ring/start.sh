#!/usr/bin/env bash
# Start a private three-node Apache Cassandra 5.0 ring for the failover tests: nodes n1, n2,
# n3 on 127.0.0.2, 127.0.0.3 and 127.0.0.4, CQL on port 9042 of each, datacenter
# "datacenter1", no auth, throwaway data (fresh on every start). The three start at once.
# The tests' URL names the three and creates the keyspace with replication factor 3:
#   cassandra://127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042/chatmem_ring?create_keyspace=true&replication_factor=3
# If all three already answer, they are kept. node.sh stops and starts one node.
#
# Environment (all optional): CHATMEM_CASSANDRA_RING_HEAP (448M per node),
# CHATMEM_CASSANDRA_RING_TIMEOUT (seconds to wait, 300).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

mkdir -p "$RUN"
lock_file "$RUN/.lock"

up=0
for node in "${NODES[@]}"; do running "$node" && up=$((up + 1)); done
if ((up == 3)) && TIMEOUT=20 ready; then
  echo "cassandra-ring: already running ($URL)"
  exit 0
fi

for node in "${NODES[@]}"; do
  kill_node "$node" KILL
  rm -rf "${RUN:?}/$node"
done
ensure_jars
for node in "${NODES[@]}"; do
  addr=$(addr_of "$node")
  port_open "$addr" "$CQL_PORT" && fail "$addr:$CQL_PORT is taken by another process"
  port_open "$addr" "$STORAGE_PORT" && fail "$addr:$STORAGE_PORT is taken by another process"
done
for node in "${NODES[@]}"; do launch "$node"; done
ready || fail "the ring did not come up"
echo "cassandra-ring: ready, 3 nodes (fresh data, $(elapsed)) $URL"
