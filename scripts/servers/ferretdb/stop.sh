#!/usr/bin/env bash
# Stop the FerretDB launcher started by start.sh. Exit 0 if it is not running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

RUN=$CHATMEM_SERVERS_RUN/ferretdb
PIDFILE=$RUN/ferretdb.pid
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

[[ -f $PIDFILE ]] || { echo "ferretdb: not running"; exit 0; }
# SIGTERM: the launcher closes its listener at once and exits within 0.5 s
# (main.go, -shutdown-grace) even if clients keep connections open. Committed
# writes are in SQLite's WAL, so the files stay valid for start.sh --keep-data.
pid=$(cat "$PIDFILE")
comm=ferretdb-launch   # ps truncates command names to 15 characters
if alive "$pid" "$comm"; then kill -TERM "$pid" 2>/dev/null || true; fi
for ((i = 0; i < 20 * 20; i++)); do alive "$pid" "$comm" || break; sleep 0.05; done
if alive "$pid" "$comm"; then
  stop_pidfile "$PIDFILE" 5   # still up: TERM again, then KILL
else
  rm -f "$PIDFILE"
fi
echo "ferretdb: stopped"
