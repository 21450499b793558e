#!/usr/bin/env bash
# `npm start`: set up what is missing (and compile what changed), then serve the compiled server on
# 127.0.0.1:50051 with an embedded etcd (data in ./.fencekeeper), or on the etcd given by --etcd /
# FENCEKEEPER_ETCD_ENDPOINTS.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node dist/server/main.js "$@"
