#!/usr/bin/env bash
# Stop every test server started by up.sh (each stop script is a no-op if it is not running).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all=(toxiproxy neo4j cassandra-ring cassandra ferretdb postgres-standby redis-sentinel redis-cluster redis mariadb postgres)
for name in "${@:-${all[@]}}"; do
  "$here/$name/stop.sh" >/dev/null 2>&1 || echo "could not stop $name" >&2
done
