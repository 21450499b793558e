#!/usr/bin/env bash
# What the console's browser test needs (test/operations/console.test.ts): Debian's chromium, which
# puppeteer-core drives headless.
#
#   scripts/setup-chromium.sh               install it when missing, now
#   scripts/setup-chromium.sh --background  the same at the lowest CPU priority, detached, so that the
#                                           tests that run meanwhile keep the cores (setup.sh --test)
#
# One install at a time (flock): the test calls this script in the foreground, which waits for a
# background install in progress and then finds chromium in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tools
log=.tools/chromium-install.log

if [ "${1:-}" = "--background" ]; then
  command -v chromium >/dev/null 2>&1 && exit 0
  nohup nice -n 19 bash "$0" >"$log" 2>&1 </dev/null &
  exit 0
fi

exec 9>.tools/chromium.lock
flock 9
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup-chromium: installing chromium (Debian package)" >&2
  # Another install may hold dpkg's lock: wait for it rather than fail.
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium >&2
else
  echo "setup-chromium: the console's browser test needs chromium: sudo apt-get install -y chromium" >&2
  exit 1
fi
