#!/usr/bin/env bash
# `npm test`: set up what is missing (a quick check when nothing changed since the last setup), then run
# every test against real etcd processes, servers and clients that the tests start themselves on free
# loopback ports.
#
#   scripts/test.sh [--tier unit|core|rest|all] [files or mocha options...]
#
# Tiers (folders, so that a new test file joins its folder's tier):
#   unit  the pure tests: test/unit/ and the fault checker's hand-made histories. No setup, no process
#         (test/harness/no-processes.ts makes starting one fail), one mocha process, which must end by
#         itself (no `exit: true`; test/harness/no-leaks.ts names what a test left open).
#   core  test/integration/ and test/client/: the server and the TypeScript client against real etcd.
#   rest  every other folder: operations, SDKs and conformance in other languages, packaging, PostgreSQL, the
#         contract, a short fuzz run and a short fault run.
#   all   everything (the default; what CI runs, as the three tiers above).
# core, rest and all run their files side by side in mocha's parallel mode, FK_TEST_JOBS at a time
# (default 3): most of a test's time is spent waiting on TTLs and on other processes, and waiting overlaps
# well even on 2 cores. Each file starts its own etcd and servers on free ports (test/harness), so the
# files are independent. The longest files start first, by the durations of the last run
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
# Longest first: by the sum of a file's test durations in the last run. Files not seen yet (all of them in
# a fresh clone) go first, the biggest first: size is a rough guess at duration, and a file of unknown
# length started last could outlast all the others.
longest_first() {
  node -e '
    const fs = require("fs");
    const files = fs.readFileSync(0, "utf8").split("\n").filter(Boolean).sort();
    const total = new Map();
    try {
      for (const line of fs.readFileSync(process.argv[1], "utf8").split("\n")) {
        if (!line) continue;
        const { file, ms } = JSON.parse(line);
        total.set(file, (total.get(file) ?? 0) + ms);
      }
    } catch {}
    const longest = Math.max(0, ...total.values());
    const weight = (f) => total.get(f) ?? longest + fs.statSync(f).size;
    files.sort((a, b) => weight(b) - weight(a));
    console.log(files.join("\n"));
  ' "$timings"
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
if [ "$tier" = unit ]; then
  # No `exit: true` (.mocharc.json) here: mocha must end by itself, and test/harness/no-leaks.ts fails the
  # run, naming it, when a test leaves a socket, server, timer or child process open.
  how=(--require test/harness/no-processes.ts --no-exit --require test/harness/no-leaks.ts)
else
  # These keep exit: true: with --no-exit --require test/harness/no-leaks.ts, mocha ends by itself, but
  # some files leave timers running (a Promise.race's timeout in test/integration/watch.test.ts and
  # wire-abuse.test.ts, a sleep() raced in test/harness/suite.ts, the delay proxy's drain timer).
  how=(--parallel --jobs "${FK_TEST_JOBS:-3}")
fi
FK_TEST_TIMINGS=$run_timings npx mocha --reporter test/harness/timings-reporter.cjs "${how[@]}" "$@" "${list[@]}"
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
