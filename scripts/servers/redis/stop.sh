#!/usr/bin/env bash
# Stop the private Redis started by start.sh. Exit 0 if it is not running.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
# Redis runs without save points, so SIGTERM alone would drop everything. Write one
# snapshot first (tiny test data: milliseconds) so that start.sh --keep-data can bring the
# data back; a plain start.sh wipes it anyway.
before_stop() {
  local port
  port=$(cat "$CHATMEM_SERVERS_RUN/redis/port" 2>/dev/null || echo "${CHATMEM_REDIS_PORT:-63799}")
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" save >/dev/null 2>&1 || true
}
stop_test_server redis redis-server TERM 10
