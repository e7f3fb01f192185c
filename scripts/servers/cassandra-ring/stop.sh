#!/usr/bin/env bash
# Stop the three nodes of the ring started by start.sh (SIGTERM, KILL after a minute). Exit 0
# if they are not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
lock_file "$RUN/.lock"
stopped=0
for node in "${NODES[@]}"; do
  if running "$node"; then
    stopped=1
    pid=$(cat "$RUN/$node.pid")
    kill -TERM "$pid" 2>/dev/null || true
  fi
done
for node in "${NODES[@]}"; do kill_node "$node" TERM; done
if ((stopped)); then echo "cassandra-ring: stopped"; else echo "cassandra-ring: not running"; fi
