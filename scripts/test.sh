#!/usr/bin/env bash
# `npm test`: set up what is missing, then run every test against real etcd processes that the tests
# start themselves on free loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# With no arguments, every test; otherwise what is given (files, --grep ...).
[ $# -eq 0 ] && set -- "test/**/*.test.ts"
exec npx mocha "$@"
