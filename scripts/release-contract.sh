#!/usr/bin/env bash
# `npm run contract:release`: makes the contract in proto/ the released one, the baseline that
# scripts/check-contract.sh checks every later change against (docs/contract.md). Run it when a release
# is cut and commit contract/released.json with the release.
#
# It moves the baseline only from a committed, lint-clean contract that is compatible with the current
# baseline: an incompatible contract is released as a new package (fencekeeper.v2) beside the old one,
# not by moving the baseline over the break. --force moves it anyway, for a break decided on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

baseline=contract/released.json
force=false
case "${1:-}" in
  --force) force=true ;;
  "") ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

if [ -n "$(git status --porcelain -- proto)" ]; then
  echo "release-contract: proto/ has uncommitted changes; a released contract is a committed one" >&2
  exit 1
fi
buf lint
if [ -f "$baseline" ] && ! buf breaking proto --against "$baseline"; then
  if ! $force; then
    echo "release-contract: the contract breaks the last release ($baseline, above); not moved (--force moves it anyway)" >&2
    exit 1
  fi
  echo "release-contract: moving the baseline over the break above (--force)" >&2
fi

# A Buf image of proto/ and what it imports, without source info (comments and line numbers change
# nothing in the wire or the generated code), as indented JSON so that a release's diff reads as what
# changed in the contract.
tmp=$(mktemp --suffix=.json)
trap 'rm -f "$tmp"' EXIT
buf build proto --exclude-source-info -o "$tmp"
mkdir -p "$(dirname "$baseline")"
node -e 'const fs = require("fs"); fs.writeFileSync(process.argv[2], JSON.stringify(JSON.parse(fs.readFileSync(process.argv[1], "utf8")), null, 2) + "\n")' "$tmp" "$baseline"
echo "release-contract: $baseline is now the contract of $(git rev-parse --short HEAD); commit it with the release" >&2
