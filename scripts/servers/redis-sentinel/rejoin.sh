#!/usr/bin/env bash
# After a failover: start every node that is down again, as a replica of the master the
# sentinels name, and wait until the topology is healthy (the sentinels see two replicas).
# The failover tests call it to bring back the master they killed.
#
# Usage: scripts/servers/redis-sentinel/rejoin.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
lock_file "$RUN/.lock"
t0=$(date +%s.%N)
m=""
# During a failover the sentinels may not agree yet: wait for them.
for ((i = 0; i < 300; i++)); do
  m=$(master) && [[ $(cli "$m" role | head -n1) == master ]] && break
  m=""
  sleep 0.1
done
[[ -n $m ]] || fail "the sentinels name no master that answers"
for port in "${NODES[@]}"; do
  reply=$(cli "$port" ping) || reply=""
  [[ $reply == PONG || $reply == LOADING* || $reply == MASTERDOWN* ]] && continue  # it is up
  # Started as a replica at once, so there is never a second master for a moment.
  start_node "$port" "$m"
done
wait_healthy 60 || fail "timeout waiting for a healthy topology (master $m)"
echo "redis-sentinel: healthy, master 127.0.0.1:$m ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'))"
