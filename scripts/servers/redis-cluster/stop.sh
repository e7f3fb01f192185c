#!/usr/bin/env bash
# Stop the private Redis Cluster started by start.sh (every node). Exit 0 if it is not running.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
RUN=$CHATMEM_SERVERS_RUN/redis-cluster
lock_file "$RUN/.lock"
stopped=0
for pidfile in "$RUN"/node-*.pid; do
  [[ -f $pidfile ]] || continue
  # Nothing to keep: a cluster always starts empty. KILL would do; TERM is as quick.
  if [[ $(stop_server redis-cluster "$pidfile" redis-server TERM 10) == *stopped ]]; then
    stopped=$((stopped + 1))
  fi
done
if ((stopped)); then
  echo "redis-cluster: stopped"
else
  echo "redis-cluster: not running"
fi
