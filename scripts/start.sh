#!/usr/bin/env bash
# `npm start`: set up what is missing, then serve on 127.0.0.1:50051 with an embedded etcd (data in
# ./.fencekeeper), or on the etcd given by --etcd / FENCEKEEPER_ETCD_ENDPOINTS.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node --import tsx server/main.ts "$@"
