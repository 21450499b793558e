#!/usr/bin/env bash
# CI's guard of the protobuf contract. Runs every check, then says which failed:
#   lint       buf lint, with the rules of buf.yaml
#   breaking   buf breaking against the previous commit (HEAD~1), with the rules of buf.yaml; skipped,
#              saying so, when there is no previous commit with proto/ (the first one, or a shallow clone)
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

say() { echo "check-contract: $*" >&2; }
passed() { say "$1: ok"; }
fail() {
  say "$1: FAILED: $2"
  failed+=("$1")
}

say "lint: buf lint"
if buf lint; then passed lint; else fail lint "buf lint found the problems above"; fi

if ! git rev-parse --verify -q 'HEAD~1^{commit}' >/dev/null; then
  say "breaking: SKIPPED: there is no previous commit to compare with (first commit, or a shallow clone)"
elif [ -z "$(git ls-tree -d 'HEAD~1' proto)" ]; then
  say "breaking: SKIPPED: the previous commit ($(git rev-parse --short 'HEAD~1')) has no proto/ to compare with"
else
  say "breaking: buf breaking against HEAD~1 ($(git rev-parse --short 'HEAD~1'))"
  if buf breaking --against '.git#ref=HEAD~1'; then
    passed breaking
  else
    fail breaking "the contract changed incompatibly since the previous commit (above)"
  fi
fi

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

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all checks passed"
