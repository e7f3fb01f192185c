#!/usr/bin/env bash
# Stop the test Neo4j started by start.sh. SIGTERM runs the launcher's shutdown hook (clean
# database shutdown); it is killed if that takes over a minute. Exit 0 if it is not running.
# The lock is start.sh's, outside the run directory that a fresh start wipes.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server neo4j java TERM 60 "$CHATMEM_SERVERS_RUN/.neo4j.lock"
