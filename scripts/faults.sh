#!/usr/bin/env bash
# `npm run faults -- [--ops N] [--seed S] [--short] [--max-minutes M] [--history file.jsonl]`: a fault-
# injection run against a 3-member etcd cluster and server replicas, judged by the history checker
# (docs/faults.md). Sets up what is missing first, as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec node --import tsx test/faults/main.ts "$@"
