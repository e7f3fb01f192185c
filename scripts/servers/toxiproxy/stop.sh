#!/usr/bin/env bash
# Stop the Toxiproxy server started by start.sh (and with it every proxy the tests made).
# Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/toxiproxy
PIDFILE=$RUN/toxiproxy.pid
mkdir -p "$RUN"
# start.sh calls us while it already holds the lock.
if [[ ${CHATMEM_SERVERS_LOCKED:-} != 1 ]]; then
  exec 9>"$RUN/.lock"
  flock 9
fi

# alive PID NAME: PID runs NAME and is not a zombie (this machine's PID 1 reaps orphans
# only every second or two, and kill -0 succeeds on a zombie).
alive() {
  local st
  st=$(ps -o stat=,comm= -p "$1" 2>/dev/null) || return 1
  [[ $st != Z* && $st == *"$2"* ]]
}

[[ -f $PIDFILE ]] || { echo "toxiproxy: not running"; exit 0; }
pid=$(cat "$PIDFILE")
comm=toxiproxy-serve   # ps truncates command names to 15 characters
if alive "$pid" "$comm"; then kill -TERM "$pid" 2>/dev/null || true; fi
for ((i = 0; i < 5 * 20; i++)); do alive "$pid" "$comm" || break; sleep 0.05; done
if alive "$pid" "$comm"; then
  stop_pidfile "$PIDFILE" 5   # still up: TERM again, then KILL
else
  rm -f "$PIDFILE"
fi
echo "toxiproxy: stopped"
