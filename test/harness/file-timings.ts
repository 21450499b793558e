// How long each test file takes from its first hook to its last, hooks included (a file whose work is in
// its before hook, such as the short fault run, has short tests and a long wall time), and the CPU it
// cost: its worker's and that of every process it started and waited for (etcd, servers, probes, JVMs),
// from /proc. With FK_TEST_TIMINGS set, one JSON line per file ({ file, ms, cpuMs, state: "file" }) is
// appended to it, beside the per-test lines of test/harness/timings-reporter.cjs; scripts/test.sh starts
// the longest files first by it, and .ci/run prints the costliest: the tiers run CPU-bound on 2 cores,
// so a file's CPU, not its wall time, is what it adds to CI's. Root hooks: in parallel mode they run in
// each worker, once per file.
import { appendFileSync, readFileSync } from "node:fs";
import { relative } from "node:path";

let started = 0;
let startedCpu = 0;

/** CPU used by this process and its reaped children, in ms (Linux: /proc/self/stat; 0 elsewhere). */
function cpuMs(): number {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // Fields after the command's closing parenthesis: utime is the 14th field of the line, then stime,
    // cutime and cstime, in clock ticks (100 a second on Linux).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return 0;
  }
}

/** The file of the run's root suite (in a worker of parallel mode, the one file it runs). */
function fileOf(ctx: Mocha.Context): string | undefined {
  const root = ctx.test?.parent;
  const file = root?.file ?? root?.suites.find((s) => s.file)?.file;
  return file ? relative(process.cwd(), file) : undefined;
}

export const mochaHooks = {
  beforeAll() {
    started = Date.now();
    startedCpu = cpuMs();
  },
  afterAll(this: Mocha.Context) {
    const out = process.env.FK_TEST_TIMINGS;
    const file = fileOf(this);
    // Only in a worker of parallel mode, which runs one file; a serial run's root hooks span every file.
    if (!out || !file || !started || !process.send) return;
    appendFileSync(out, JSON.stringify({ file, ms: Date.now() - started, cpuMs: cpuMs() - startedCpu, state: "file" }) + "\n");
  },
};
