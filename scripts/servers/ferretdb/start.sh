#!/usr/bin/env bash
# Start FerretDB v1.24 (MongoDB wire protocol) with its SQLite backend for the
# tests on 127.0.0.1:${CHATMEM_FERRETDB_PORT:-27027}, no auth.
#   URL: mongodb://127.0.0.1:27027/
# It is embedded in a small Go launcher (main.go here), built once into
# $CHATMEM_SERVERS_CACHE/ferretdb and rebuilt only when go.mod, go.sum, main.go
# or the Go version change. Needs Go >= 1.24 on PATH.
#
# Default: FRESH data (old SQLite files under $CHATMEM_SERVERS_RUN/ferretdb are
# wiped). With --keep-data or CHATMEM_KEEP_DATA=1 the existing files are reused,
# so stop.sh + start.sh --keep-data simulates "server went away and came back".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

PORT=${CHATMEM_FERRETDB_PORT:-27027}
KEEP=${CHATMEM_KEEP_DATA:-0}
[[ ${1:-} == --keep-data ]] && KEEP=1
PYTHON=${CHATMEM_PYTHON:-python3}
# FerretDB logs every error reply (even pymongo's harmless endSessions) with the
# whole message at "warn", which floods the log in a test run; "error" keeps it
# to real problems. Set CHATMEM_FERRETDB_LOG_LEVEL=debug to see every request.
LOG_LEVEL=${CHATMEM_FERRETDB_LOG_LEVEL:-error}
RUN=$CHATMEM_SERVERS_RUN/ferretdb
DATA=$RUN/data
LOG=$RUN/ferretdb.log
PIDFILE=$RUN/ferretdb.pid
OUT=$CHATMEM_SERVERS_CACHE/ferretdb
BIN=$OUT/ferretdb-launcher
URL="mongodb://127.0.0.1:$PORT/"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

# A real "ping" command over the wire protocol. pymongo if it is importable;
# otherwise a hand-made OP_MSG with the standard library, so the script does not
# depend on which Python environment runs it.
answers() {
  "$PYTHON" - "$PORT" 2>/dev/null <<'PY'
import os, socket, struct, sys
port = int(sys.argv[1])
try:
    import pymongo
except ImportError:
    pymongo = None
if pymongo:
    c = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=3000,
                            connectTimeoutMS=3000)
    ok = c.admin.command("ping").get("ok") == 1
    c.close()
    os._exit(0 if ok else 1)   # skip pymongo's exit hooks, which idle for ~0.5 s
def cstr(s): return s.encode() + b"\0"
body = b"\x10" + cstr("ping") + struct.pack("<i", 1) + b"\x02" + cstr("$db") \
    + struct.pack("<i", 6) + cstr("admin")
doc = struct.pack("<i", len(body) + 5) + body + b"\0"
msg = struct.pack("<I", 0) + b"\0" + doc               # flagBits, section kind 0
with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
    s.sendall(struct.pack("<iiii", 16 + len(msg), 1, 0, 2013) + msg)   # OP_MSG
    reply = s.recv(65536)
# {"ok": 1.0} comes back as a double element named "ok"
sys.exit(0 if b"\x01ok\x00" + struct.pack("<d", 1.0) in reply else 1)
PY
}
fail() {
  echo "ferretdb: $*" >&2
  [[ -f $LOG ]] && tail -n 40 "$LOG" >&2
  exit 1
}

mkdir -p "$RUN" "$OUT"
# Serialise concurrent start/stop calls (and builds). The server must not inherit
# fd 9, or it would hold the lock forever: see 9>&- below.
exec 9>"$RUN/.lock"
flock 9

if port_open 127.0.0.1 "$PORT" && answers; then
  echo "ferretdb: already running on 127.0.0.1:$PORT ($URL)"
  exit 0
fi

# Rebuild only when the inputs change. modernc.org/sqlite is the slow part of a
# cold build (about a minute on 2 cores); with a warm GOCACHE it is seconds.
command -v go >/dev/null || fail "go is not on PATH (Go >= 1.24 is needed to build FerretDB)"
hash=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" <(go version) | sha256sum | cut -d' ' -f1)
if [[ ! -x $BIN || $(cat "$BIN.sha256" 2>/dev/null) != "$hash" ]]; then
  echo "ferretdb: building launcher into $BIN ..."
  b0=$(date +%s)
  # CGO off: modernc.org/sqlite is pure Go. Build to a temp name and rename, so
  # an interrupted build never leaves a half-written binary behind.
  # The output ("go: downloading ..." lines on a fresh machine) goes to a log.
  if ! (cd "$here" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -o "$BIN.tmp" .) \
    9>&- >"$OUT/build.log" 2>&1; then
    tail -n 40 "$OUT/build.log" >&2
    echo "ferretdb: go build failed (full output: $OUT/build.log)" >&2
    exit 1
  fi
  mv -f "$BIN.tmp" "$BIN"
  echo "$hash" >"$BIN.sha256"
  echo "ferretdb: built in $(($(date +%s) - b0))s"
fi

# Whatever we started earlier is not answering: stop it before touching its data.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" 9>&- >/dev/null
port_open 127.0.0.1 "$PORT" && fail "127.0.0.1:$PORT is taken by another process"

if [[ $KEEP == 1 && -d $DATA ]]; then
  mode="kept data"
else
  mode="fresh data"
  rm -rf "$DATA" "$LOG"
  mkdir -p "$DATA"
fi

# setsid: its own session, so a test runner killing our process group does not
# take the server down with it.
setsid "$BIN" -listen "127.0.0.1:$PORT" -sqlite-dir "$DATA" -log-level "$LOG_LEVEL" \
  </dev/null >>"$LOG" 2>&1 9>&- &
echo $! >"$PIDFILE"

# The launcher listens within ~50 ms, so poll the port more often than wait_tcp.
for ((i = 0; i < 600; i++)); do
  port_open 127.0.0.1 "$PORT" && break
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || fail "the launcher exited during startup"
  sleep 0.1
done
((i < 600)) || fail "timeout waiting for 127.0.0.1:$PORT"
for ((i = 0; i < 20; i++)); do
  answers && break
  sleep 0.5
done
((i < 20)) || fail "FerretDB does not answer ping"
echo "ferretdb: ready on 127.0.0.1:$PORT ($mode, $(elapsed)) $URL"
