#!/usr/bin/env bash
# Start-up time of the server (to its first SERVING health answer) and of `fencekeeper --help`, from the
# TypeScript sources and compiled: `bash scripts/startup-time.sh [--runs N]` (bench/startup-time.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node --import tsx bench/startup-time.ts "$@"
