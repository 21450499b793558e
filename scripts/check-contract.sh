#!/usr/bin/env bash
# CI's guard of the protobuf contract. Runs every check (or those named: check-contract.sh breaking),
# then says which failed:
#   lint       buf lint, with the rules of buf.yaml
#   breaking   buf breaking of proto/ against the last released contract, contract/released.json, with
#              the rules of buf.yaml (docs/contract.md; npm run contract:release moves it at a release).
#              Unreleased additions may still change between commits: only what was released is held.
#   fresh      gen/ and the manifests that scripts/write-manifests.sh writes are what `npm run generate`
#              makes from the committed proto/ and toolchain.env. It regenerates in place (gen/ is never
#              edited by hand) and compares with the last commit; the generators are installed into
#              .tools/ first when missing (needs Go, Maven and Python 3).
# Exits 0 when every check that ran passed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"

generated=(gen test/conformance/go/go.mod test/conformance/go/go.sum test/conformance/java/pom.xml sdk/go/go.mod sdk/go/go.sum sdk/java/pom.xml sdk/java/probe/pom.xml)
failed=()

baseline=contract/released.json
for check in "$@"; do
  case "$check" in lint | breaking | fresh) ;; *) echo "usage: $0 [lint] [breaking] [fresh]" >&2; exit 2 ;; esac
done
only=" $* "
# wanted CHECK: true when CHECK is to run (every check when none is named).
wanted() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }

say() { echo "check-contract: $*" >&2; }
passed() { say "$1: ok"; }
fail() {
  say "$1: FAILED: $2"
  failed+=("$1")
}

if wanted lint; then
  say "lint: buf lint"
  if buf lint; then passed lint; else fail lint "buf lint found the problems above"; fi
fi

if wanted breaking; then
  if [ ! -f "$baseline" ]; then
    fail breaking "$baseline, the last released contract, is missing (npm run contract:release writes it)"
  else
    say "breaking: buf breaking proto against the last release ($baseline)"
    if buf breaking proto --against "$baseline"; then
      passed breaking
    else
      fail breaking "the contract breaks the last release (above); add instead of changing, or see docs/contract.md"
    fi
  fi
fi

if wanted fresh; then
  say "fresh: regenerating with scripts/generate.sh"
  if ! bash scripts/generate.sh; then
    fail fresh "generation itself failed (above)"
  else
    stale=$(git status --porcelain --untracked-files=all -- "${generated[@]}")
    if [ -z "$stale" ]; then
      passed fresh
    else
      git --no-pager diff --stat -- "${generated[@]}" >&2
      fail fresh "these generated files differ from the last commit; run npm run generate and commit them:
$stale"
    fi
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all checks passed"
