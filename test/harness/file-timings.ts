// How long each test file takes from its first hook to its last, hooks included (a file whose work is in
// its before hook, such as the short fault run, has short tests and a long wall time). With
// FK_TEST_TIMINGS set, one JSON line per file ({ file, ms, state: "file" }) is appended to it, beside the
// per-test lines of test/harness/timings-reporter.cjs; scripts/test.sh starts the longest files first by
// it. Root hooks: in parallel mode they run in each worker, once per file.
import { appendFileSync } from "node:fs";
import { relative } from "node:path";

let started = 0;

/** The file of the run's root suite (in a worker of parallel mode, the one file it runs). */
function fileOf(ctx: Mocha.Context): string | undefined {
  const root = ctx.test?.parent;
  const file = root?.file ?? root?.suites.find((s) => s.file)?.file;
  return file ? relative(process.cwd(), file) : undefined;
}

export const mochaHooks = {
  beforeAll() {
    started = Date.now();
  },
  afterAll(this: Mocha.Context) {
    const out = process.env.FK_TEST_TIMINGS;
    const file = fileOf(this);
    // Only in a worker of parallel mode, which runs one file; a serial run's root hooks span every file.
    if (!out || !file || !started || !process.send) return;
    appendFileSync(out, JSON.stringify({ file, ms: Date.now() - started, state: "file" }) + "\n");
  },
};
