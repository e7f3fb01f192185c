#!/usr/bin/env bash
# Stop or start one node of the ring started by start.sh, keeping its data.
#
# Usage: scripts/servers/cassandra-ring/node.sh kill|stop|start|status n1|n2|n3
#   kill    SIGKILL, as a crash (the commit log it wrote is replayed on start)
#   stop    SIGTERM, a drain
#   start   start it again on its data and wait until it answers CQL and sees its peers
#   status  "up" or "down" (its process)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
action=${1:-}
node=${2:-}
[[ $node == n1 || $node == n2 || $node == n3 ]] || fail "usage: node.sh kill|stop|start|status n1|n2|n3"
case $action in
  kill) kill_node "$node" KILL ;;
  stop) kill_node "$node" TERM ;;
  status) running "$node" && echo up || echo down ;;
  start)
    t0=$(date +%s.%N)
    lock_file "$RUN/.$node.lock"
    if ! running "$node"; then
      [[ -d $RUN/$node/data ]] || fail "$node has no data: start the ring with start.sh"
      ensure_jars
      launch "$node"
    fi
    ready "$node" || fail "$node did not come back"
    echo "cassandra-ring: $node up after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }')"
    ;;
  *) fail "usage: node.sh kill|stop|start|status n1|n2|n3" ;;
esac
