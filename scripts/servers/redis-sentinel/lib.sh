# Shared by the redis-sentinel scripts. Source it; do not run it.
#
# The topology: three Redis servers (one master, two replicas) on 127.0.0.1:$BASE..$BASE+2
# and three sentinels on 127.0.0.1:$SBASE..$SBASE+2 watching them as service "chatmem"
# (quorum 2). Each process has a directory of its own under $RUN with its config file, which
# the sentinels rewrite as they fail over.
# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

BASE=${CHATMEM_REDIS_SENTINEL_PORT:-7201}
SBASE=${CHATMEM_REDIS_SENTINELS_PORT:-26401}
SERVICE=chatmem
NODES=("$BASE" $((BASE + 1)) $((BASE + 2)))
SENTINELS=("$SBASE" $((SBASE + 1)) $((SBASE + 2)))
RUN=$CHATMEM_SERVERS_RUN/redis-sentinel
URL="redis+sentinel://127.0.0.1:$SBASE,127.0.0.1:$((SBASE + 1)),127.0.0.1:$((SBASE + 2))/$SERVICE/0"
# How long a silent master counts as down before the sentinels fail over (and how long a
# failover may take): short for the tests, long enough that a busy 2-core machine does not
# fail over by itself.
DOWN_AFTER=${CHATMEM_REDIS_SENTINEL_DOWN_AFTER:-2000}
FAILOVER_TIMEOUT=${CHATMEM_REDIS_SENTINEL_FAILOVER_TIMEOUT:-5000}

fail() {
  echo "redis-sentinel: $*" >&2
  local d
  for d in "$RUN"/*/; do
    [[ -f $d/redis.log ]] && { echo "-- $(basename "$d")" >&2; tail -n 10 "$d/redis.log" >&2; }
  done
  exit 1
}

cli() { timeout 3 redis-cli -h 127.0.0.1 -p "$@" 2>/dev/null; }

# master_of_sentinel PORT: the master address one sentinel reports ("127.0.0.1 7201").
master_of_sentinel() { cli "$1" sentinel get-master-addr-by-name "$SERVICE" | paste -sd' '; }

# master: the port of the node every sentinel names as the master, if they agree.
master() {
  local s found="" addr
  for s in "${SENTINELS[@]}"; do
    addr=$(master_of_sentinel "$s") || return 1
    [[ -n $addr ]] || return 1
    if [[ -z $found ]]; then found=$addr; elif [[ $found != "$addr" ]]; then return 1; fi
  done
  echo "${found##* }"
}

# healthy: the sentinels agree on a master that says it is one, each sees the two other
# sentinels and two replicas that are up, and both replicas' links to the master are up.
healthy() {
  local m s info port
  m=$(master) || return 1
  [[ $(cli "$m" role | head -n1) == master ]] || return 1
  for s in "${SENTINELS[@]}"; do
    info=$(cli "$s" sentinel master "$SERVICE" | paste -sd' ') || return 1
    [[ " $info " == *" num-slaves 2 "* && " $info " == *" num-other-sentinels 2 "* &&
      " $info " == *" flags master "* ]] || return 1
    info=$(cli "$s" sentinel replicas "$SERVICE" | paste -sd' ') || return 1
    [[ $info != *s_down* && $info != *disconnected* ]] || return 1
  done
  for port in "${NODES[@]}"; do
    [[ $port == "$m" ]] && continue
    info=$(cli "$port" info replication) || return 1
    [[ $info == *role:slave* && $info == *"master_port:$m"* && $info == *master_link_status:up* ]] \
      || return 1
  done
}

# start_node PORT [MASTER_PORT]: start one Redis server (a replica of MASTER_PORT if given) in
# its own directory, with a config file the sentinels may rewrite.
start_node() {
  local port=$1 of=${2:-} dir=$RUN/node-$1
  mkdir -p "$dir"
  # No persistence (no RDB save points, no AOF): a killed node comes back empty and takes a
  # full copy from its master, disklessly and at once.
  cat >"$dir/redis.conf" <<CONF
bind 127.0.0.1
port $port
protected-mode no
save ""
appendonly no
dir $dir
logfile $dir/redis.log
maxclients 4000
repl-diskless-sync yes
repl-diskless-sync-delay 0
CONF
  [[ -n $of ]] && echo "replicaof 127.0.0.1 $of" >>"$dir/redis.conf"
  # setsid: its own session, so a test runner killing our process group does not take it
  # down; 9>&-: it must not inherit the start/stop lock.
  setsid redis-server "$dir/redis.conf" --daemonize no </dev/null >/dev/null 2>&1 9>&- &
  echo $! >"$RUN/node-$port.pid"
  local i reply
  for ((i = 0; i < 300; i++)); do
    # A replica answers LOADING (or MASTERDOWN) while it takes its copy: it is up.
    reply=$(cli "$port" ping) || reply=""
    [[ $reply == PONG || $reply == LOADING* || $reply == MASTERDOWN* ]] && return 0
    alive "$(cat "$RUN/node-$port.pid")" redis-server || break
    sleep 0.1
  done
  fail "node $port did not start"
}

# start_sentinel PORT MASTER_PORT
start_sentinel() {
  local port=$1 master=$2 dir=$RUN/sentinel-$1
  rm -rf "$dir"
  mkdir -p "$dir"
  cat >"$dir/sentinel.conf" <<CONF
bind 127.0.0.1
port $port
protected-mode no
dir $dir
logfile $dir/redis.log
sentinel monitor $SERVICE 127.0.0.1 $master 2
sentinel down-after-milliseconds $SERVICE $DOWN_AFTER
sentinel failover-timeout $SERVICE $FAILOVER_TIMEOUT
sentinel parallel-syncs $SERVICE 2
CONF
  # Debian's redis-sentinel is redis-server in sentinel mode.
  setsid redis-server "$dir/sentinel.conf" --sentinel --daemonize no \
    </dev/null >/dev/null 2>&1 9>&- &
  echo $! >"$RUN/sentinel-$port.pid"
  local i
  for ((i = 0; i < 100; i++)); do
    [[ $(cli "$port" ping) == PONG ]] && return 0
    alive "$(cat "$RUN/sentinel-$port.pid")" redis-server || break
    sleep 0.1
  done
  fail "sentinel $port did not start"
}

# wait_healthy SECONDS
wait_healthy() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    healthy && return 0
    sleep 0.1
  done
  return 1
}
