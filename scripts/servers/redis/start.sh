#!/usr/bin/env bash
# Start a private Redis (Debian package, 7.0) for the tests on
# 127.0.0.1:${CHATMEM_REDIS_PORT:-63799}, no password, no persistence while running
# (no RDB save points, no AOF).   URL: redis://127.0.0.1:63799/0
#
# Default: starts EMPTY (any dump under $CHATMEM_SERVERS_RUN/redis is wiped).
# With --keep-data or CHATMEM_KEEP_DATA=1 it loads the dump.rdb that stop.sh
# writes just before stopping, so stop.sh + start.sh --keep-data simulates
# "server went away and came back" with the data intact.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

PORT=${CHATMEM_REDIS_PORT:-63799}
KEEP=${CHATMEM_KEEP_DATA:-0}
[[ ${1:-} == --keep-data ]] && KEEP=1
RUN=$CHATMEM_SERVERS_RUN/redis
LOG=$RUN/redis.log
PIDFILE=$RUN/redis.pid
URL="redis://127.0.0.1:$PORT/0"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

answers() { [[ $(timeout 3 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) == PONG ]]; }
fail() {
  echo "redis: $*" >&2
  [[ -f $LOG ]] && tail -n 40 "$LOG" >&2
  exit 1
}

mkdir -p "$RUN"
# Serialise concurrent start/stop calls. The server must not inherit fd 9, or it
# would hold the lock forever: see 9>&- below.
exec 9>"$RUN/.lock"
flock 9

if command -v redis-cli >/dev/null && answers; then
  echo "redis: already running on 127.0.0.1:$PORT ($URL)"
  exit 0
fi

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install redis-server redis-tools
fi

# Whatever we started earlier is not answering: stop it first.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" 9>&- >/dev/null
port_open 127.0.0.1 "$PORT" && fail "127.0.0.1:$PORT is taken by another process"

if [[ $KEEP == 1 && -f $RUN/dump.rdb ]]; then
  mode="kept data"
else
  mode="fresh data"
  rm -f "$RUN/dump.rdb" "$LOG"
fi
echo "$PORT" >"$RUN/port"   # for stop.sh's final SAVE

# Runs in the foreground (no --daemonize) so $! is the server pid. setsid: its
# own session, so a test runner killing our process group does not take it down.
setsid redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode no \
  --save '' --appendonly no --dir "$RUN" --dbfilename dump.rdb \
  --logfile "$LOG" --daemonize no --maxclients 4000 \
  </dev/null >/dev/null 2>&1 9>&- &
echo $! >"$PIDFILE"

for ((i = 0; i < 100; i++)); do
  answers && break
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || fail "redis-server exited during startup"
  sleep 0.1
done
((i < 100)) || fail "timeout waiting for redis-server"
echo "redis: ready on 127.0.0.1:$PORT ($mode, $(elapsed)) $URL"
