#!/usr/bin/env bash
# Installs what fencekeeper needs to run and test on a fresh machine: npm dependencies, and etcd
# (Debian's etcd-server) when it is missing. Safe to run again: it does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
# --test: also what the test suite needs beyond running the server (other languages' toolchains).
for_tests=0
[ "${1:-}" = "--test" ] && for_tests=1

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "fencekeeper setup: installing npm dependencies" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# The JavaScript that `npm start`, the container image and the fencekeeper command run; compiled only
# when a source changed since the last build.
bash scripts/build.sh

if ! command -v etcd >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "fencekeeper setup: installing etcd (Debian package etcd-server)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq etcd-server >&2
  else
    echo "fencekeeper setup: etcd is missing. Install it with:" >&2
    echo "  sudo apt-get install -y etcd-server" >&2
    exit 1
  fi
fi

if [ "$for_tests" = 1 ]; then
  # The PostgreSQL fencing tests run a throwaway cluster of Debian's postgresql (test/harness/postgres.ts).
  if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "fencekeeper setup: installing PostgreSQL (Debian package postgresql)" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2 \
        || { echo "fencekeeper setup: installing postgresql failed; the PostgreSQL tests need it" >&2; exit 1; }
    else
      echo "fencekeeper setup: PostgreSQL is missing (the tests need it). Install it with:" >&2
      echo "  sudo apt-get install -y postgresql" >&2
      exit 1
    fi
  fi
  for extra in scripts/setup-*.sh; do
    [ -e "$extra" ] && bash "$extra"
  done
fi
