#!/usr/bin/env bash
# `npm test`: set up what is missing (a quick check when nothing changed since the last setup), then run
# every test against real etcd processes, servers and clients that the tests start themselves on free
# loopback ports.
#
#   scripts/test.sh [--tier unit|core|rest|all] [files or mocha options...]
#
# Tiers (folders, so that a new test file joins its folder's tier):
#   unit  the pure tests: test/unit/ and the fault checker's hand-made histories. No setup, no process
#         (test/harness/no-processes.ts makes starting one fail), one mocha process.
#   core  test/integration/ and test/client/: the server and the TypeScript client against real etcd.
#   rest  every other folder: operations, SDKs and conformance in other languages, packaging, PostgreSQL, the
#         contract, a short fuzz run and a short fault run.
#   all   everything (the default; what CI runs, as the three tiers above).
# core, rest and all run their files side by side in mocha's parallel mode, FK_TEST_JOBS at a time
# (default 4): most of a test's time is spent waiting on TTLs and on other processes, and waiting overlaps
# well even on 2 cores. 6 at a time took the tiers from 219 and 339 s to 185 and 305 s here, but on the CI
# machine the whole run was no shorter (718 s against 707 s at 4) and the load stalled processes for
# seconds: a 2 s lease expired under a test that was not about TTLs, and a fuzz call went unanswered.
# Each file starts its own etcd and servers on free ports (test/harness), so the files are independent. Every tier must end by itself (no `exit: true`): test/harness/no-leaks.ts fails
# a file that leaves a socket, server, timer or child process open, and names it. The longest files start first, by the durations of the last run
# (.test-results/timings.jsonl, written by test/harness/timings-reporter.cjs).
# Options given (--grep ...) apply to the tier's files; files given run as given, in one process, one file
# after another.
set -euo pipefail
cd "$(dirname "$0")/.."

tier=all
if [ "${1:-}" = "--tier" ]; then
  tier=${2:?"--tier needs one of unit, core, rest, all"}
  shift 2
fi
case $tier in
  unit | core | rest | all) ;;
  *) echo "scripts/test.sh: unknown tier \"$tier\" (unit, core, rest or all)" >&2; exit 2 ;;
esac

if [ "$tier" != unit ]; then
  bash scripts/setup.sh --test
  # Setup compiled dist/: the tests' servers run it (test/harness/server.ts).
  export FK_TEST_COMPILED=1
  # The TypeScript programs the tests start (probes, holders, workers), each bundled into one file that
  # starts without tsx (test/harness/programs.ts). A second or two, every run: they follow the sources.
  export FK_TEST_PROGRAMS=.test-results/programs
  node --import tsx test/harness/bundle-programs.ts "$FK_TEST_PROGRAMS"
  # The JVMs the tests start (the Java SDK's probes, Spring and ShedLock applications, ZooKeeper and
  # Curator in the peers' smoke run) live seconds each: the client compiler alone and one GC thread
  # start them for less CPU than the server compiler's and a parallel GC's threads, which on 2 cores
  # compete with every other test. Measured on this 2-core machine, each file alone: the Java SDK suite
  # 68 s of CPU → 48 s, the peers' smoke run 76 s → 62 s, both passing alike. The tests measure no
  # Java's speed (the peers' benchmark itself runs without this). A caller's own setting is kept.
  export JAVA_TOOL_OPTIONS=${JAVA_TOOL_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}
fi

# The files of a tier, one a line.
files() {
  case $1 in
    unit) find test/unit -name '*.test.ts'; echo test/faults/checker.test.ts ;;
    core) find test/integration test/client -name '*.test.ts' ;;
    rest) find test -name '*.test.ts' -not -path 'test/unit/*' -not -path 'test/faults/checker.test.ts' \
      -not -path 'test/integration/*' -not -path 'test/client/*' ;;
    all) find test -name '*.test.ts' ;;
  esac
}

timings=.test-results/timings.jsonl
# What a fresh clone orders by: each file's duration in a CI run, committed (refresh it with
# `scripts/test.sh --save-durations` after a full run). A file's own last run, when there is one, wins.
expected=test/expected-durations.jsonl
if [ "${1:-}" = "--save-durations" ]; then
  node -e '
    const fs = require("fs");
    const rows = fs.readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((r) => r.state === "file");
    rows.sort((a, b) => a.file.localeCompare(b.file));
    fs.writeFileSync(process.argv[2], rows.map((r) => JSON.stringify({ file: r.file, ms: r.ms })).join("\n") + "\n");
    console.log(`${rows.length} files written to ${process.argv[2]}`);
  ' "$timings" "$expected"
  exit 0
fi
# Longest first: by a file's wall time (hooks included, test/harness/file-timings.ts) in its last run,
# else the sum of its tests' durations, else the committed expectation. Files not known at all go first,
# the biggest first: size is a rough guess at duration, and a file of unknown length started last could
# outlast all the others.
longest_first() {
  node -e '
    const fs = require("fs");
    const files = fs.readFileSync(0, "utf8").split("\n").filter(Boolean).sort();
    const read = (f) => { try { return fs.readFileSync(f, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; } };
    const sum = new Map(), wall = new Map(), expected = new Map();
    for (const { file, ms, state } of read(process.argv[1])) {
      if (state === "file") wall.set(file, ms);
      else sum.set(file, (sum.get(file) ?? 0) + ms);
    }
    for (const { file, ms } of read(process.argv[2])) expected.set(file, ms);
    const known = (f) => wall.get(f) ?? sum.get(f) ?? expected.get(f);
    const longest = Math.max(0, ...files.map((f) => known(f) ?? 0));
    const weight = (f) => known(f) ?? longest + fs.statSync(f).size;
    files.sort((a, b) => weight(b) - weight(a));
    console.log(files.join("\n"));
  ' "$timings" "$expected"
}

# Files given (a path or a glob among the arguments): run as given, in one process.
for arg in "$@"; do
  case $arg in
    -*) ;;
    *'*'* | *.ts | *.js | *.mjs) exec npx mocha "$@" ;;
    *) [ -e "$arg" ] && exec npx mocha "$@" ;;
  esac
done

mapfile -t list < <(files "$tier" | longest_first)
mkdir -p .test-results
# The durations of this run replace the last run's for the files it ran, once it is over.
run_timings=$(mktemp)
trap 'rm -f "$run_timings"' EXIT
set +e
# Mocha must end by itself (.mocharc.json has no `exit: true`), and test/harness/no-leaks.ts, which it
# loads, fails a file that leaves a socket, server, timer or child process open, naming it (after each
# file, in parallel mode's workers).
if [ "$tier" = unit ]; then
  how=(--require test/harness/no-processes.ts)
else
  how=(--parallel --jobs "${FK_TEST_JOBS:-4}")
fi
# A last guard, should a run hang all the same (a handle of a kind no-leaks does not look for in mocha's
# own process): the run is ended and fails, rather than holding CI to its limit.
FK_TEST_TIMINGS=$run_timings timeout --kill-after=10 "${FK_TEST_TIME_LIMIT:-1800}" npx mocha --reporter test/harness/timings-reporter.cjs "${how[@]}" "$@" "${list[@]}"
status=$?
set -e
# FK_RUN_TIMINGS: a file of the caller's (.ci/run's) that collects the durations of its runs.
[ -n "${FK_RUN_TIMINGS:-}" ] && cat "$run_timings" >>"$FK_RUN_TIMINGS"
# A dry run's durations (all 0) say nothing of the next run's.
case " $* " in *" --dry-run "*) : >"$run_timings" ;; esac
if [ -s "$run_timings" ]; then
  node -e '
    const fs = require("fs");
    const [last, now] = process.argv.slice(1);
    const fresh = fs.readFileSync(now, "utf8").split("\n").filter(Boolean);
    const ran = new Set(fresh.map((l) => JSON.parse(l).file));
    let kept = [];
    try { kept = fs.readFileSync(last, "utf8").split("\n").filter((l) => l && !ran.has(JSON.parse(l).file)); } catch {}
    fs.writeFileSync(last, [...kept, ...fresh].join("\n") + "\n");
  ' "$timings" "$run_timings"
fi
exit $status
