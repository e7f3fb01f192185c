#!/usr/bin/env bash
# Start a private Redis Sentinel topology (Debian's redis-server, 7.0, sentinels run as
# `redis-server --sentinel`) for the failover tests, on 127.0.0.1: one master and two replicas
# on ${CHATMEM_REDIS_SENTINEL_PORT:-7201} and the two ports after it, three sentinels on
# ${CHATMEM_REDIS_SENTINELS_PORT:-26401} and the two after it, watching service "chatmem" with
# quorum 2, down-after-milliseconds 2000, failover-timeout 5000. No persistence.
#   URL: redis+sentinel://127.0.0.1:26401,127.0.0.1:26402,127.0.0.1:26403/chatmem/0
#
# A healthy topology (the sentinels agree on a master with two replicas; either node may be
# the master after a failover) is left as it is; a node that is down is started again as a
# replica of the master (rejoin.sh); otherwise the topology starts FRESH with 7201 the master.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

mkdir -p "$RUN"
lock_file "$RUN/.lock"

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install redis-server redis-tools
fi

if healthy; then
  echo "redis-sentinel: already running, master 127.0.0.1:$(master) ($URL)"
  exit 0
fi
if master >/dev/null && CHATMEM_SERVERS_LOCKED=1 "$here/rejoin.sh" 9>&- >/dev/null 2>&1; then
  echo "redis-sentinel: rejoined, master 127.0.0.1:$(master) ($URL)"
  exit 0
fi

# Whatever we started earlier is not a healthy topology: stop it and start from nothing.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" >/dev/null
for port in "${NODES[@]}" "${SENTINELS[@]}"; do
  port_open 127.0.0.1 "$port" && fail "127.0.0.1:$port is taken by another process"
done
rm -rf "${RUN:?}"/node-* "${RUN:?}"/sentinel-*

start_node "${NODES[0]}"
start_node "${NODES[1]}" "${NODES[0]}"
start_node "${NODES[2]}" "${NODES[0]}"
for port in "${SENTINELS[@]}"; do start_sentinel "$port" "${NODES[0]}"; done
# The sentinels find the replicas and each other within a few seconds (hello messages every 2 s).
wait_healthy 30 || fail "timeout waiting for the sentinels to see two replicas and each other"
echo "redis-sentinel: ready on 127.0.0.1:${NODES[0]}-${NODES[2]}, sentinels ${SENTINELS[0]}-${SENTINELS[2]} (fresh data, $(elapsed)) $URL"
