#!/usr/bin/env bash
# `npm run faults -- [--ops N] [--seed S] [--short] [--max-minutes M] [--history file.jsonl]`: a fault-
# injection run against a 3-member etcd cluster and server replicas, judged by the history checker
# (docs/faults.md). Sets up what is missing first, as the tests do.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# The replicas run the compiled server (dist/, which setup.sh builds), as users run it.
export FK_TEST_COMPILED=1
# A long run holds a million operations and millions of etcd events in memory.
exec node --max-old-space-size=16384 --import tsx test/faults/main.ts "$@"
