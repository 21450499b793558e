#!/usr/bin/env bash
# `npm run fuzz -- [requests] [seed]`: the long fuzz run (default 1,000,000 requests) against a real etcd
# and two real servers, one without and one with authentication. Prints the seed first, progress every
# 10 s, and at the end a table of answers per method and of every invariant with how often it was
# checked and broken (the first breach in full). Exits 1 if any invariant broke. docs/fuzzing.md explains.
#   FUZZ_REQUESTS, FUZZ_SEED: the same as the arguments; the arguments win.
#   FUZZ_ONLY=12,345: send only these case numbers of the run (to replay a breach).
#   FUZZ_VERBOSE=1: print every breach, not only the first of each invariant.
#   FUZZ_CONCURRENCY: calls in flight at once (default 48).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
requests=${1:-${FUZZ_REQUESTS:-1000000}}
seed=${2:-${FUZZ_SEED:-$(( (RANDOM << 15) | RANDOM ))}}
exec node --import tsx test/fuzz/main.ts "$requests" "$seed"
