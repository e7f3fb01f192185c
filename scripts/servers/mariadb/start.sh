#!/usr/bin/env bash
# Start a private MariaDB 10.11 (Debian package) for the tests on
# 127.0.0.1:${CHATMEM_MARIADB_PORT:-23306}: user test/test with all privileges on
# testdb (and on testdb_* for per-worker databases).
#   URL: mysql+pymysql://test:test@127.0.0.1:23306/testdb?charset=utf8mb4
# Server charset utf8mb4, collation utf8mb4_bin (case- and accent-sensitive, like
# the other backends compare ids); override with CHATMEM_MARIADB_COLLATION.
#
# Default: FRESH data (old data under $CHATMEM_SERVERS_RUN/mariadb is wiped).
# With --keep-data or CHATMEM_KEEP_DATA=1 an existing valid datadir is reused, so
# stop.sh + start.sh --keep-data simulates "server went away and came back".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"

PORT=${CHATMEM_MARIADB_PORT:-23306}
COLLATION=${CHATMEM_MARIADB_COLLATION:-utf8mb4_bin}
KEEP=${CHATMEM_KEEP_DATA:-0}
[[ ${1:-} == --keep-data ]] && KEEP=1
RUN=$CHATMEM_SERVERS_RUN/mariadb
DATA=$RUN/data
SOCK=$RUN/mysqld.sock
LOG=$RUN/mariadbd.err
PIDFILE=$RUN/mariadb.pid
URL="mysql+pymysql://test:test@127.0.0.1:$PORT/testdb?charset=utf8mb4"
t0=$(date +%s.%N)
elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1fs", b - a }'; }

# A real login as the test user over TCP, the way the tests connect.
answers() {
  mariadb --no-defaults --connect-timeout=3 -h 127.0.0.1 -P "$PORT" -utest -ptest testdb \
    -NBe 'SELECT 1' 2>/dev/null | grep -qx 1
}
fail() {
  echo "mariadb: $*" >&2
  [[ -f $LOG ]] && tail -n 40 "$LOG" >&2
  exit 1
}

mkdir -p "$RUN"
# Serialise concurrent start/stop calls. The server must not inherit fd 9, or it
# would hold the lock forever: see 9>&- below.
exec 9>"$RUN/.lock"
flock 9

if command -v mariadb >/dev/null && answers; then
  echo "mariadb: already running on 127.0.0.1:$PORT ($URL)"
  exit 0
fi

if [[ ! -x /usr/sbin/mariadbd ]] || ! command -v mariadb >/dev/null; then
  apt_install mariadb-server mariadb-client
fi

# Whatever we started earlier is not answering: stop it before touching its data.
CHATMEM_SERVERS_LOCKED=1 "$here/stop.sh" 9>&- >/dev/null
port_open 127.0.0.1 "$PORT" && fail "127.0.0.1:$PORT is taken by another process"

# mariadbd runs as user mysql and silently dies if it cannot write its socket,
# pid file or error log, so the whole directory belongs to mysql.
chown mysql:mysql "$RUN"
if [[ $KEEP == 1 && -f $DATA/mysql/global_priv.frm && -f $DATA/ibdata1 ]]; then
  mode="kept data"
else
  mode="fresh data"
  rm -rf "$DATA" "$LOG" "$SOCK"
  # --no-defaults: ignore /etc/mysql so the system config cannot leak in.
  # root may log in only through the private socket as OS user root.
  mariadb-install-db --no-defaults --user=mysql --datadir="$DATA" \
    --auth-root-authentication-method=socket --skip-test-db >"$RUN/install-db.log" 2>&1 \
    || { cat "$RUN/install-db.log" >&2; fail "mariadb-install-db failed"; }
fi

# Durability traded for speed (throwaway data); skip-name-resolve avoids DNS
# lookups per connection (so accounts are matched on 127.0.0.1 / %).
# setsid: its own session, so a test runner killing our process group (or a
# closing terminal) does not take the server down with it.
setsid /usr/sbin/mariadbd --no-defaults --user=mysql --datadir="$DATA" \
  --port="$PORT" --bind-address=127.0.0.1 --socket="$SOCK" \
  --pid-file="$RUN/mariadbd.pid" --log-error="$LOG" \
  --character-set-server=utf8mb4 --collation-server="$COLLATION" \
  --max-connections=300 --skip-name-resolve \
  --innodb-buffer-pool-size=128M \
  --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --sync-binlog=0 \
  </dev/null >"$RUN/stdout.log" 2>&1 9>&- &
echo $! >"$PIDFILE"

for ((i = 0; i < 240; i++)); do
  mariadb-admin --no-defaults --socket="$SOCK" -uroot ping >/dev/null 2>&1 && break
  kill -0 "$(cat "$PIDFILE")" 2>/dev/null || fail "mariadbd exited during startup"
  sleep 0.25
done
((i < 240)) || fail "timeout waiting for mariadbd"

# Idempotent setup as root over the private socket (a kept datadir has it all).
mariadb --no-defaults --socket="$SOCK" -uroot >/dev/null <<SQL || fail "creating user/database failed"
CREATE DATABASE IF NOT EXISTS testdb CHARACTER SET utf8mb4 COLLATE $COLLATION;
CREATE USER IF NOT EXISTS 'test'@'127.0.0.1' IDENTIFIED BY 'test';
CREATE USER IF NOT EXISTS 'test'@'localhost' IDENTIFIED BY 'test';
CREATE USER IF NOT EXISTS 'test'@'%' IDENTIFIED BY 'test';
GRANT ALL PRIVILEGES ON testdb.* TO 'test'@'127.0.0.1', 'test'@'localhost', 'test'@'%';
GRANT ALL PRIVILEGES ON \`testdb\\_%\`.* TO 'test'@'127.0.0.1', 'test'@'localhost', 'test'@'%';
SQL

answers || fail "server started but test@testdb does not answer"
echo "mariadb: ready on 127.0.0.1:$PORT ($mode, $(elapsed)) $URL"
