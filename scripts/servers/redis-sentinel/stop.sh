#!/usr/bin/env bash
# Stop the private Redis Sentinel topology started by start.sh (sentinels first, then the
# servers, so no failover starts while it stops). Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
lock_file "$RUN/.lock"
stopped=0
for pidfile in "$RUN"/sentinel-*.pid "$RUN"/node-*.pid; do
  [[ -f $pidfile ]] || continue
  # Nothing to keep: the topology always starts empty.
  if [[ $(stop_server redis-sentinel "$pidfile" redis-server TERM 10) == *stopped ]]; then
    stopped=$((stopped + 1))
  fi
done
if ((stopped)); then echo "redis-sentinel: stopped"; else echo "redis-sentinel: not running"; fi
