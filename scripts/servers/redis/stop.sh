#!/usr/bin/env bash
# Stop the private Redis started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/redis
PIDFILE=$RUN/redis.pid
mkdir -p "$RUN"
# start.sh calls us while it already holds the lock.
if [[ ${CHATMEM_SERVERS_LOCKED:-} != 1 ]]; then
  exec 9>"$RUN/.lock"
  flock 9
fi

# alive PID NAME: PID runs NAME and is not a zombie. This machine's PID 1 reaps
# orphans only every second or two and kill -0 succeeds on a zombie, so
# stop_pidfile alone would wait ~2 s for a server that has already exited.
alive() {
  local st
  st=$(ps -o stat=,comm= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* && $st == *"$2"* ]]
}

[[ -f $PIDFILE ]] || { echo "redis: not running"; exit 0; }
pid=$(cat "$PIDFILE")
comm=redis-server
port=$(cat "$RUN/port" 2>/dev/null || echo "${CHATMEM_REDIS_PORT:-63799}")
# Redis runs without save points, so SIGTERM alone would drop everything. Write
# one snapshot first (tiny test data: milliseconds) so that start.sh --keep-data
# can bring the data back; a plain start.sh wipes it anyway.
if alive "$pid" "$comm"; then
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" save >/dev/null 2>&1 || true
  kill -TERM "$pid" 2>/dev/null || true
fi
for ((i = 0; i < 10 * 20; i++)); do alive "$pid" "$comm" || break; sleep 0.05; done
if alive "$pid" "$comm"; then
  stop_pidfile "$PIDFILE" 5   # still up: TERM again, then KILL
else
  rm -f "$PIDFILE"
fi
echo "redis: stopped"
