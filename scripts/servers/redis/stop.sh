#!/usr/bin/env bash
# Stop the private Redis started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/redis
PIDFILE=$RUN/redis.pid
lock_run_dir "$RUN"
# Redis runs without save points, so SIGTERM alone would drop everything. Write one
# snapshot first (tiny test data: milliseconds) so that start.sh --keep-data can bring the
# data back; a plain start.sh wipes it anyway.
if [[ -f $PIDFILE ]] && alive "$(cat "$PIDFILE")" redis-server; then
  port=$(cat "$RUN/port" 2>/dev/null || echo "${CHATMEM_REDIS_PORT:-63799}")
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" save >/dev/null 2>&1 || true
fi
stop_server redis "$PIDFILE" redis-server TERM 10
