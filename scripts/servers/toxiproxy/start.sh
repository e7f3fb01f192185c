#!/usr/bin/env bash
# Start Toxiproxy v2.5.0 (a TCP proxy whose faults the tests switch on and off over HTTP)
# on 127.0.0.1:${CHATMEM_TOXIPROXY_PORT:-8474}. It starts with no proxies: each test
# creates the proxies it needs through the API (tests/support/toxiproxy.py).
#   URL: http://127.0.0.1:8474
# The server is built once from the Go module proxy into
# $CHATMEM_SERVERS_CACHE/toxiproxy and rebuilt only when the version or Go changes
# (about 20 s to a minute on 2 cores). Needs Go on PATH.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

VERSION=v2.5.0
PORT=${CHATMEM_TOXIPROXY_PORT:-8474}
RUN=$CHATMEM_SERVERS_RUN/toxiproxy
LOG=$RUN/toxiproxy.log
PIDFILE=$RUN/toxiproxy.pid
OUT=$CHATMEM_SERVERS_CACHE/toxiproxy
BIN=$OUT/toxiproxy-server
URL="http://127.0.0.1:$PORT"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

# GET /proxies answers 200 with a JSON object. (GET /version says "git" in a build made
# by go install, which sets no version, so it cannot tell the version apart.)
answers() {
  local reply
  reply=$(exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'GET /proxies HTTP/1.0\r\n\r\n' >&3 &&
    timeout 3 cat <&3) 2>/dev/null || return 1
  [[ $reply == "HTTP/1."?" 200"* && $reply == *"{"* ]]
}
fail() {
  echo "toxiproxy: $*" >&2
  [[ -f $LOG ]] && tail -n 40 "$LOG" >&2
  exit 1
}

mkdir -p "$RUN" "$OUT"
# Serialise concurrent start/stop calls (and builds). The server must not inherit fd 9,
# or it would hold the lock forever: see 9>&- below.
exec 9>"$RUN/.lock"
flock 9

if port_open 127.0.0.1 "$PORT" && answers; then
  echo "toxiproxy: already running on 127.0.0.1:$PORT ($URL)"
  exit 0
fi

command -v go >/dev/null || fail "go is not on PATH (needed to build Toxiproxy $VERSION)"
hash=$(printf '%s %s' "$VERSION" "$(go version)" | sha256sum | cut -d' ' -f1)
if [[ ! -x $BIN || $(cat "$BIN.sha256" 2>/dev/null) != "$hash" ]]; then
  echo "toxiproxy: building $VERSION into $BIN ..."
  b0=$(date +%s)
  # Install into a scratch GOBIN and rename, so an interrupted build never leaves a
  # half-written binary behind. -mod=mod: build from the module's own go.mod/go.sum.
  rm -rf "$OUT/gobin"
  if ! (cd "$OUT" && GOBIN="$OUT/gobin" GOFLAGS=-mod=mod CGO_ENABLED=0 \
    go install "github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION") \
    9>&- >"$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log" >&2
    echo "toxiproxy: go install failed (full output: $OUT/build.log)" >&2
    exit 1
  fi
  mv -f "$OUT/gobin/server" "$BIN"
  rm -rf "$OUT/gobin"
  echo "$hash" >"$BIN.sha256"
  echo "toxiproxy: built in $(($(date +%s) - b0))s"
fi

# Whatever we started earlier is not answering: stop it first.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" 9>&- >/dev/null
port_open 127.0.0.1 "$PORT" && fail "127.0.0.1:$PORT is taken by another process"

# setsid: its own session, so a test runner killing our process group does not take the
# server down with it. It keeps no state, so every start is fresh.
# LOG_LEVEL=warn: at its default it logs every API call, and the tests make many.
rm -f "$LOG"
LOG_LEVEL=${CHATMEM_TOXIPROXY_LOG_LEVEL:-warn} setsid "$BIN" -host 127.0.0.1 -port "$PORT" </dev/null >>"$LOG" 2>&1 9>&- &
echo $! >"$PIDFILE"

for ((i = 0; i < 100; i++)); do
  port_open 127.0.0.1 "$PORT" && answers && break
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || fail "the server exited during startup"
  sleep 0.1
done
((i < 100)) || fail "timeout waiting for 127.0.0.1:$PORT"
echo "toxiproxy: ready on 127.0.0.1:$PORT ($(elapsed)) $URL"
