#!/usr/bin/env bash
# Does the fault checker catch a broken server? Not in CI (a short fault run per build, about 2 minutes
# each). For each diff in test/faults/broken/*.patch (or those given), on a scratch copy of this checkout
# (in a temporary folder; this checkout is not touched): apply the diff, build the server's dist/ there,
# run the short fault profile against it (the replicas run the compiled server), and expect the run to
# fail: a violation of some property, or acknowledged operations below the short profile's floor.
# Prints one line per build (which properties caught it, with how many violations) and exits 1 if any
# broken build passed. Each run's output stays in $TMPDIR/fencekeeper-broken-builds/.
#
#   scripts/broken-builds.sh [--seed N] [--control] [test/faults/broken/x.patch ...]
#   --control  also runs the unbroken copy first, which must pass
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seed=${FAULTS_SEED:-11}
control=0
patches=()
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --control) control=1; shift ;;
    *) patches+=("$1"); shift ;;
  esac
done
[ ${#patches[@]} -gt 0 ] || patches=(test/faults/broken/*.patch)

out=${TMPDIR:-/tmp}/fencekeeper-broken-builds
mkdir -p "$out"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fencekeeper-broken-XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The copy: every file git knows of or would add, as it is in the working tree; the dependencies shared.
base=$scratch/base
mkdir -p "$base"
git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$base"
ln -s "$root/node_modules" "$base/node_modules"
echo "building the unbroken copy in $base" >&2
(cd "$base" && bash scripts/build.sh)

# One build: its name, and the folder to run it from. Prints its line of the table.
run() {
  local name=$1 dir=$2 expect=$3 rc=0
  echo "fault run against $name (seed $seed): $out/$name.out" >&2
  (cd "$dir" && FK_TEST_COMPILED=1 timeout 1200 node --import tsx test/faults/main.ts --short --seed "$seed") >"$out/$name.out" 2>&1 || rc=$?
  local caught
  # The properties' table only: "observe" also names a row of the operations' table, its count of calls.
  caught=$(awk '/^property +violations/ { p = 1; next } p && /^$/ { exit }
    p && $1 ~ /^[a-z]+$/ && $2 ~ /^[0-9]+$/ && $2 > 0 { printf "%s%s %s", sep, $1, $2; sep = ", " }' "$out/$name.out")
  local floor
  floor=$(sed -n 's/^acknowledged operations below the floor: //p' "$out/$name.out")
  [ -n "$floor" ] && caught="${caught:+$caught; }below the floor: $floor"
  local verdict
  if [ "$expect" = fail ]; then
    if [ $rc -eq 1 ] && [ -n "$caught" ]; then verdict=caught; else verdict="NOT CAUGHT (exit $rc)"; failed=1; fi
  else
    if [ $rc -eq 0 ]; then verdict=passed; else verdict="FAILED (exit $rc)"; failed=1; fi
  fi
  printf '%-26s %-14s %s\n' "$name" "$verdict" "${caught:--}"
}

failed=0
printf '%-26s %-14s %s\n' build verdict "violations (property count), floor"
[ $control -eq 1 ] && run unbroken "$base" pass
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  dir=$scratch/$name
  cp -a "$base" "$dir"
  (cd "$dir" && git apply -p1 "$root/$p" && bash scripts/build.sh) >"$out/$name.build" 2>&1 || { printf '%-26s %s\n' "$name" "did not apply or build: $out/$name.build"; failed=1; continue; }
  run "$name" "$dir" fail
  rm -rf "$dir"
done
exit $failed
