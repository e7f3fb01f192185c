#!/usr/bin/env bash
# Start one node of the test Redis Cluster on 127.0.0.1:PORT (cluster bus on PORT+10000), in
# its own directory under $CHATMEM_SERVERS_RUN/redis-cluster, keeping its nodes.conf: start.sh
# uses it for every node of a fresh cluster, and the failover test uses it to bring back a
# node it killed (which then rejoins with its old identity, as a replica).
#
# Usage: scripts/servers/redis-cluster/node.sh PORT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

PORT=${1:?usage: node.sh PORT}
RUN=$CHATMEM_SERVERS_RUN/redis-cluster
DIR=$RUN/$PORT
# How long a silent master counts as failing before its replica takes over. Long enough that
# a busy 2-core machine does not trigger failovers by itself, short enough for the tests.
TIMEOUT=${CHATMEM_REDIS_CLUSTER_NODE_TIMEOUT:-3000}
mkdir -p "$DIR"

answers() { [[ $(timeout 3 redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null) == PONG ]]; }

# No persistence while running (no RDB save points, no AOF), like the single Redis.
# setsid: its own session, so a test runner killing our process group does not take it down;
# 9>&-: it must not inherit a start/stop lock.
setsid redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode no \
  --cluster-enabled yes --cluster-config-file "$DIR/nodes.conf" \
  --cluster-node-timeout "$TIMEOUT" \
  --save '' --appendonly no --dir "$DIR" --dbfilename dump.rdb \
  --logfile "$DIR/redis.log" --daemonize no --maxclients 4000 \
  </dev/null >/dev/null 2>&1 9>&- &
echo $! >"$RUN/node-$PORT.pid"

for ((i = 0; i < 100; i++)); do
  answers && exit 0
  kill -0 "$(cat "$RUN/node-$PORT.pid")" 2>/dev/null || break
  sleep 0.1
done
echo "redis-cluster: node $PORT did not start" >&2
tail -n 20 "$DIR/redis.log" >&2 || true
exit 1
