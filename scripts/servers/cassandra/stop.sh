#!/usr/bin/env bash
# Stop the test Cassandra started by start.sh. SIGTERM lets it drain (flush memtables, close
# the commit log); it is killed if that takes over a minute. Exit 0 if it is not running.
# The lock is start.sh's, outside the run directory that a fresh start wipes.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server cassandra java TERM 60 "$CHATMEM_SERVERS_RUN/.cassandra.lock"
