#!/usr/bin/env bash
# Stop the Toxiproxy server started by start.sh (and with it every proxy the tests made).
# Exit 0 if it is not running. ps truncates command names to 15 characters.
set -euo pipefail
source "$(dirname "$0")/../common.sh"
stop_test_server toxiproxy toxiproxy-serve TERM 5
