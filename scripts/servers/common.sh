# Shared helpers for the test-server scripts. Source it; do not run it.
#
# Every server runs on 127.0.0.1 with throwaway data under $CHATMEM_SERVERS_RUN,
# and caches what it downloads or builds under $CHATMEM_SERVERS_CACHE so a warm
# machine starts fast.

CHATMEM_ROOT=${CHATMEM_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CHATMEM_SERVERS_RUN=${CHATMEM_SERVERS_RUN:-/tmp/chatmem-servers}
CHATMEM_SERVERS_CACHE=${CHATMEM_SERVERS_CACHE:-$CHATMEM_ROOT/.ci-cache}
mkdir -p "$CHATMEM_SERVERS_RUN" "$CHATMEM_SERVERS_CACHE"
chmod 755 "$CHATMEM_SERVERS_RUN"

# wait_tcp HOST PORT TIMEOUT_SECONDS [PIDFILE]: 0 once the port accepts a TCP connection.
wait_tcp() {
  local host=$1 port=$2 timeout=$3 pidfile=${4:-} i
  for ((i = 0; i < timeout * 2; i++)); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
    if [[ -n $pidfile && -f $pidfile ]] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "process from $pidfile died before $host:$port opened" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "timeout waiting for $host:$port" >&2
  return 1
}

# port_open HOST PORT: 0 if something listens there now.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# stop_pidfile PIDFILE [GRACE_SECONDS]: TERM, wait, then KILL.
stop_pidfile() {
  local pidfile=$1 grace=${2:-30} pid deadline
  [[ -f $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    deadline=$((${EPOCHREALTIME/./} + grace * 1000000))
    while kill -0 "$pid" 2>/dev/null && ((${EPOCHREALTIME/./} < deadline)); do sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# apt_install PKG...: install Debian packages that are missing (apt-get update once per run).
apt_install() {
  local missing=() p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  if [[ ! -f $CHATMEM_SERVERS_RUN/.apt-updated ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && touch "$CHATMEM_SERVERS_RUN/.apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# lock_file FILE: hold FILE's lock on fd 9 until the script exits, so that one server's start
# and stop scripts run one at a time. A start.sh that calls stop.sh while it holds the lock
# says so with CHATMEM_SERVERS_LOCKED=1.
lock_file() {
  mkdir -p "$(dirname "$1")"
  if [[ ${CHATMEM_SERVERS_LOCKED:-} != 1 ]]; then
    exec 9>"$1"
    flock 9
  fi
}

# alive PID NAME: PID runs NAME and is not a zombie. This machine's PID 1 reaps orphans
# only every second or two and kill -0 succeeds on a zombie, so stop_pidfile alone would
# wait ~2 s for a server that has already exited.
alive() {
  local stat comm
  read -r stat comm < <(ps -o stat=,comm= -p "$1" 2>/dev/null) || return 1
  # The whole name: a pid reused by "not-postgres" is not our postgres.
  [[ $stat != Z* && $comm == "$2" ]]
}

# stop_server NAME PIDFILE COMM SIGNAL GRACE_SECONDS: send SIGNAL to the server (COMM is its
# command name as ps shows it, at most 15 characters), wait up to GRACE_SECONDS for it to
# exit, then TERM again and KILL. Exit quietly if it is not running.
stop_server() {
  local name=$1 pidfile=$2 comm=$3 signal=$4 grace=$5 pid deadline
  if [[ ! -f $pidfile ]] || ! alive "$(cat "$pidfile")" "$comm"; then
    rm -f "$pidfile"
    echo "$name: not running"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill "-$signal" "$pid" 2>/dev/null || true
  # A deadline, not a count of polls: each poll runs ps, which takes a while on a busy machine.
  deadline=$((${EPOCHREALTIME/./} + grace * 1000000))
  while alive "$pid" "$comm" && ((${EPOCHREALTIME/./} < deadline)); do sleep 0.05; done
  if alive "$pid" "$comm"; then
    stop_pidfile "$pidfile" 5 # still up: TERM again, then KILL
  else
    rm -f "$pidfile"
  fi
  echo "$name: stopped"
}

# stop_test_server NAME COMM SIGNAL GRACE_SECONDS [LOCKFILE]: all that a stop.sh does. Under
# the server's start/stop lock (default $CHATMEM_SERVERS_RUN/NAME/.lock), stop the process in
# $CHATMEM_SERVERS_RUN/NAME/NAME.pid with stop_server. A stop.sh that defines before_stop
# has it called first with the pid, only while the server runs (Redis saves a snapshot there).
stop_test_server() {
  local name=$1 comm=$2 signal=$3 grace=$4
  local run=$CHATMEM_SERVERS_RUN/$name
  local pidfile=$run/$name.pid
  lock_file "${5:-$run/.lock}"
  if [[ -f $pidfile ]] && alive "$(cat "$pidfile")" "$comm" && declare -F before_stop >/dev/null; then
    before_stop "$(cat "$pidfile")"
  fi
  stop_server "$name" "$pidfile" "$comm" "$signal" "$grace"
}
