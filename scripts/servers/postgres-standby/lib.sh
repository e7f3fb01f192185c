# Helpers of the PostgreSQL primary/standby topology's scripts. Source it; do not run it.
#
# Two nodes, n1 on ${CHATMEM_POSTGRES_STANDBY_PORT:-25451} and n2 on the port after it, each
# with its data in $CHATMEM_SERVERS_RUN/postgres-standby/NODE/data, its unix socket in
# $CHATMEM_SERVERS_RUN/postgres-standby/NODE and its postmaster's pid in
# $CHATMEM_SERVERS_RUN/postgres-standby/NODE.pid. Either node may be the primary: a failover
# promotes the standby, and rejoin.sh clones the old primary again as the new one's standby.

# shellcheck source=../common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"

BASE=${CHATMEM_POSTGRES_STANDBY_PORT:-25451}
RUN=$CHATMEM_SERVERS_RUN/postgres-standby
BIN=/usr/lib/postgresql/15/bin
NODES=(n1 n2)
URL="postgresql+psycopg://test:test@127.0.0.1:$BASE,127.0.0.1:$((BASE + 1))/testdb?target_session_attrs=read-write"

port_of() { [[ $1 == n1 ]] && echo "$BASE" || echo $((BASE + 1)); }
other_of() { [[ $1 == n1 ]] && echo n2 || echo n1; }
as_pg() { runuser -u postgres -- "$@"; }

fail() {
  echo "postgres-standby: $*" >&2
  local node
  for node in "${NODES[@]}"; do
    [[ -f $RUN/$node/server.log ]] && { echo "-- $node" >&2; tail -n 15 "$RUN/$node/server.log" >&2; }
  done
  exit 1
}

# sql NODE QUERY...: run each QUERY in turn (one session) as the test user over TCP, the way
# the tests connect; print the answers (unaligned, tuples only).
sql() {
  local node=$1 q args=()
  shift
  for q in "$@"; do args+=(-c "$q"); done
  PGPASSWORD=test PGCONNECT_TIMEOUT=3 psql -h 127.0.0.1 -p "$(port_of "$node")" -U test \
    -d testdb -XqtA -v ON_ERROR_STOP=1 "${args[@]}" 2>/dev/null
}

# role NODE: "primary", "standby", or "down" (not answering).
role() {
  case $(sql "$1" 'SELECT pg_is_in_recovery()') in
    f) echo primary ;;
    t) echo standby ;;
    *) echo down ;;
  esac
}

# primary: the node that answers and is not in recovery (none: exit status 1). Two of them
# (an old primary started again after its standby was promoted) count as none, with a warning:
# which one holds the acknowledged writes is not for a script to guess (rejoin.sh then starts
# afresh).
primary() {
  local node found=()
  for node in "${NODES[@]}"; do
    [[ $(role "$node") == primary ]] && found+=("$node")
  done
  if ((${#found[@]} > 1)); then
    echo "postgres-standby: both nodes are primaries" >&2
    return 1
  fi
  ((${#found[@]} == 1)) && echo "${found[0]}"
}

# streaming PRIMARY: the primary has exactly one standby and it is streaming.
streaming() {
  [[ $(sql "$1" "SELECT count(*) FILTER (WHERE state = 'streaming') || ',' || count(*)
    FROM pg_stat_replication") == 1,1 ]]
}

# healthy: one primary, one standby, and the standby streams from the primary.
healthy() {
  local p
  p=$(primary) || return 1
  [[ $(role "$(other_of "$p")") == standby ]] && streaming "$p"
}

# start_node NODE: start its server on the data in place (primary or standby, as the data says).
# Settings that trade durability for speed, as for the single test server: the failover tests
# kill the primary's processes, never the machine, so what matters is what reached the standby.
# synchronous_commit and synchronous_standby_names are NOT set here: mode.sh sets them with
# ALTER SYSTEM, which a command-line setting would override.
start_node() {
  local node=$1 port dir i
  port=$(port_of "$node")
  dir=$RUN/$node
  # A postmaster a test killed (SIGQUIT) may still be closing its socket.
  for ((i = 0; i < 100; i++)); do
    port_open 127.0.0.1 "$port" || break
    sleep 0.1
  done
  port_open 127.0.0.1 "$port" && fail "127.0.0.1:$port is taken by another process"
  # max_connections and shared_buffers are in postgresql.conf (start.sh): initdb writes them
  # there, and on the command line too they would make every reload (mode.sh) log errors.
  local opts="-p $port -k $dir -c listen_addresses=127.0.0.1"
  opts+=" -c fsync=off -c full_page_writes=off"
  # A promoted standby makes a new timeline; cloning the old primary again needs no WAL kept.
  opts+=" -c wal_level=replica -c max_wal_senders=4 -c hot_standby=on"
  opts+=" -c wal_receiver_status_interval=1s -c wal_sender_timeout=10s"
  # 9>&-: the server must not inherit the start/stop lock.
  as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -o "$opts" start \
    9>&- >"$dir/pg_ctl.log" 2>&1 || { cat "$dir/pg_ctl.log" >&2; fail "pg_ctl start of $node failed"; }
  head -n 1 "$dir/data/postmaster.pid" >"$RUN/$node.pid"
}

# ours PID NODE: PID is NODE's postmaster (not a zombie, not a reused pid: its command line
# names NODE's data directory).
ours() {
  { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -q -- "-D $RUN/$2/data"
}

# running NODE: NODE's postmaster runs (as its pid file says).
running() {
  [[ -f $RUN/$1.pid ]] && ours "$(cat "$RUN/$1.pid")" "$1"
}

# stop_node NODE: a fast shutdown (SIGINT: ends open sessions), KILL after 30 s.
stop_node() {
  local node=$1 pidfile=$RUN/$1.pid pid i
  if [[ -f $pidfile ]]; then
    pid=$(cat "$pidfile")
    if ours "$pid" "$node"; then
      kill -INT "$pid" 2>/dev/null || true
      for ((i = 0; i < 300; i++)); do
        ours "$pid" "$node" || break
        sleep 0.1
      done
      ours "$pid" "$node" && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$pidfile"
  fi
}

# clone NODE PRIMARY: wipe NODE's data and make it a streaming standby of PRIMARY
# (pg_basebackup -R writes primary_conninfo and standby.signal), then start it.
clone() {
  local node=$1 from=$2 dir=$RUN/$1
  stop_node "$node"
  rm -rf "$dir/data"
  mkdir -p "$dir"
  chown postgres:postgres "$dir"
  as_pg "$BIN/pg_basebackup" -h "$RUN/$from" -p "$(port_of "$from")" -U postgres \
    -D "$dir/data" -R -X stream -c fast --no-sync >"$dir/basebackup.log" 2>&1 \
    || { cat "$dir/basebackup.log" >&2; fail "pg_basebackup of $node from $from failed"; }
  # The primary's ALTER SYSTEM settings came with the copy: a standby must not wait for a
  # standby of its own once promoted (mode.sh sets them on whichever node is the primary).
  as_pg sed -i '/^synchronous_standby_names/d' "$dir/data/postgresql.auto.conf"
  start_node "$node"
}

# wait_streaming PRIMARY: until its standby streams (60 s at most).
wait_streaming() {
  local i
  for ((i = 0; i < 600; i++)); do
    streaming "$1" && return 0
    sleep 0.1
  done
  fail "the standby of $1 is not streaming"
}

# set_mode MODE: "sync" makes the primary wait, at every commit, until the standby has the
# commit's WAL on disk (synchronous_standby_names = '*', synchronous_commit = on);
# "async" acknowledges commits at once and streams them after. Waits until the primary
# reports its standby with that sync_state.
set_mode() {
  local mode=$1 p names state i
  p=$(primary) || fail "no primary to set $mode replication on"
  case $mode in
    sync) names="*" state=sync ;;
    async) names="" state=async ;;
    *) fail "unknown mode $mode (sync or async)" ;;
  esac
  sql "$p" "ALTER SYSTEM SET synchronous_standby_names = '$names'" \
    "ALTER SYSTEM SET synchronous_commit = on" "SELECT pg_reload_conf()" >/dev/null \
    || fail "ALTER SYSTEM on $p failed"
  for ((i = 0; i < 300; i++)); do
    [[ $(sql "$p" "SELECT sync_state FROM pg_stat_replication") == "$state" ]] && break
    sleep 0.05
  done
  ((i < 300)) || fail "the standby of $p did not become $state"
  echo "$mode" >"$RUN/mode"
}
