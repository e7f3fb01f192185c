#!/usr/bin/env bash
# Start a private Redis Cluster (Debian's redis-server, 7.0) for the tests: three masters and
# three replicas on 127.0.0.1, ports ${CHATMEM_REDIS_CLUSTER_PORT:-7101} and the five after it
# (cluster bus: port + 10000), cluster-enabled, created with `redis-cli --cluster create
# --cluster-replicas 1`. No persistence while running.
#   URL: redis+cluster://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
#
# Always starts EMPTY: stale nodes.conf and data are removed, since a cluster cannot be
# re-created from nodes that remember another one. If all six nodes already answer and the
# cluster is healthy (cluster_state:ok, all 16384 slots covered), it is left as it is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

BASE=${CHATMEM_REDIS_CLUSTER_PORT:-7101}
PORTS=()
for ((n = 0; n < 6; n++)); do PORTS+=($((BASE + n))); done
RUN=$CHATMEM_SERVERS_RUN/redis-cluster
URL="redis+cluster://127.0.0.1:$BASE,127.0.0.1:$((BASE + 1)),127.0.0.1:$((BASE + 2))"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }
fail() {
  echo "redis-cluster: $*" >&2
  for port in "${PORTS[@]}"; do
    [[ -f $RUN/$port/redis.log ]] && { echo "-- node $port" >&2; tail -n 15 "$RUN/$port/redis.log" >&2; }
  done
  exit 1
}

# healthy: every node answers, sees cluster_state:ok with every slot assigned and healthy, and
# knows six nodes; every replica's link to its master is up.
healthy() {
  local port info
  for port in "${PORTS[@]}"; do
    info=$(timeout 3 redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null) || return 1
    [[ $info == *cluster_state:ok* && $info == *cluster_slots_ok:16384* &&
      $info == *cluster_known_nodes:6* ]] || return 1
    info=$(timeout 3 redis-cli -h 127.0.0.1 -p "$port" info replication 2>/dev/null) || return 1
    [[ $info == *role:master* || $info == *master_link_status:up* ]] || return 1
  done
}

lock_file "$RUN/.lock"

if command -v redis-cli >/dev/null && healthy; then
  echo "redis-cluster: already running on 127.0.0.1:${PORTS[0]}-${PORTS[5]} ($URL)"
  exit 0
fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install redis-server redis-tools
fi

# Whatever we started earlier is not a healthy cluster: stop it and forget it.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" >/dev/null
for port in "${PORTS[@]}"; do
  port_open 127.0.0.1 "$port" && fail "127.0.0.1:$port is taken by another process"
  port_open 127.0.0.1 $((port + 10000)) && fail "127.0.0.1:$((port + 10000)) is taken by another process"
  rm -rf "${RUN:?}/$port"
done

for port in "${PORTS[@]}"; do
  "$here/node.sh" "$port" 9>&- || fail "node $port did not start"
done

nodes=()
for port in "${PORTS[@]}"; do nodes+=("127.0.0.1:$port"); done
# The first three become masters, each of the others a replica of one of them.
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
  >"$RUN/create.log" 2>&1 || fail "redis-cli --cluster create failed: $(tail -n 5 "$RUN/create.log")"

for ((i = 0; i < 300; i++)); do
  healthy && break
  sleep 0.1
done
((i < 300)) || fail "timeout waiting for cluster_state:ok on every node"
echo "redis-cluster: ready on 127.0.0.1:${PORTS[0]}-${PORTS[5]} (3 masters, 3 replicas, fresh data, $(elapsed)) $URL"
