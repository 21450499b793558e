// A smoke run of `npm run bench:peers` (bench/peers/): one round at 1 and 4 lockers, a second a row,
// every system through every workload it takes part in, so that the benchmark does not rot. It says
// nothing of speed: it checks that every system ran, and what each store did with a paused holder's
// write (which does not depend on timing: the next holder is granted only once the paused one's lease
// is gone).
import { expect } from "chai";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Results } from "../../bench/peers/main.js";
import { SYSTEMS } from "../../bench/peers/systems.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);
const HOLDS = 100;

describe("npm run bench:peers, a smoke run (one round, 1 and 4 lockers, 1 s a row)", function () {
  this.timeout(900_000);
  let results: Results;
  let output = "";
  let stdout = "";
  const out = mkdtempSync(join(tmpdir(), "fencekeeper-peers-smoke-"));
  after(() => rmSync(out, { recursive: true, force: true }));

  before(async () => {
    // The workers (Go, Java), built when their sources changed; cached under .conformance/peers.
    await run("bash", ["scripts/bench-peers.sh", "--build-only"], { cwd: ROOT, maxBuffer: 64 << 20 });
    const args = ["--import", "tsx", "bench/peers/main.ts", "--rounds", "1", "--levels", "1,4", "--seconds", "1", "--holds", String(HOLDS), "--hold-seconds", "1", "--out", out];
    const r = await run(process.execPath, args, { cwd: ROOT, maxBuffer: 64 << 20 }).catch(
      (err: { stdout?: string; stderr?: string; message: string }) => ({ stdout: err.stdout ?? "", stderr: `${err.stderr ?? ""}\n${err.message}` }),
    );
    stdout = r.stdout;
    output = `${r.stdout}\n${r.stderr}`.slice(-6000);
    const json = readdirSync(out).filter((f) => f.endsWith(".json"));
    expect(json, `the run wrote no JSON:\n${output}`).to.have.length(1);
    results = JSON.parse(readFileSync(join(out, json[0]), "utf8"));
  });

  it("finished without a failure, and wrote the chart and the markdown tables", () => {
    expect(results.failures, output).to.deep.equal([]);
    expect(readdirSync(out).filter((f) => f.endsWith(".svg"))).to.have.length(1);
    expect(readFileSync(join(out, readdirSync(out).find((f) => f.endsWith(".svg"))!), "utf8")).to.match(/^<svg [^]*<\/svg>\n$/);
    expect(stdout).to.include("| system | cycles/s, 1 | cycles/s, 4 |");
  });

  it("has a row of acquire + release cycles for every system at each level, with cycles done, no errors, and the servers' CPU read", () => {
    for (const s of SYSTEMS) {
      for (const lockers of [1, 4]) {
        const row = results.cycles.find((c) => c.system === s.id && c.lockers === lockers);
        expect(row, `${s.id} at ${lockers}`).to.not.equal(undefined);
        expect(row!.cycles, `${s.id} at ${lockers}`).to.be.greaterThan(0);
        expect(row!.errors, `${s.id} at ${lockers}: ${row!.firstError}`).to.equal(0);
        for (const server of s.servers) expect(row!.cpuMsPerCycle[server], `${s.id}: ${server}'s CPU`).to.be.a("number").and.not.NaN;
        expect(row!.cpuMsPerCycle.client, `${s.id}: the client's CPU`).to.be.a("number").and.not.NaN;
      }
    }
  });

  it("handed over, crashed over and held on every system that takes part in each", () => {
    for (const s of SYSTEMS) {
      if (s.workloads.includes("handover")) {
        const h = results.handover.find((x) => x.system === s.id);
        expect(h?.handovers, `${s.id} handover: ${h?.firstError}`).to.be.greaterThan(0);
        expect(h!.p50Ms, s.id).to.be.greaterThan(0);
      }
      if (s.workloads.includes("crash")) expect(results.crash.find((x) => x.system === s.id)?.ms, `${s.id} crash`).to.be.greaterThan(0);
      if (s.workloads.includes("hold")) {
        const h = results.hold.find((x) => x.system === s.id);
        expect(h?.acquired, `${s.id} hold: ${h?.firstError}`).to.equal(HOLDS);
      }
    }
  });

  it("the paused holder's write: fencekeeper's fenced store and etcd's IsOwner compare refuse it; a plain etcd Put, ZooKeeper and Redis take it", () => {
    const writes = (id: string) => results.timeline.find((t) => t.system === id)?.writes ?? [];
    for (const id of ["fk-go", "fk-go-sessions"]) {
      const store = writes(id).find((w) => w.how.startsWith("fenced store Put"));
      expect(store?.accepted, `${id}: ${JSON.stringify(writes(id))}`).to.equal(false);
      expect(store!.error).to.include("stale token");
    }
    expect(writes("etcd-mutex").find((w) => w.how === "plain Put")?.accepted).to.equal(true);
    expect(writes("etcd-mutex").find((w) => w.how.startsWith("Txn If(mutex.IsOwner())"))?.accepted).to.equal(false);
    expect(writes("curator-mutex").map((w) => w.accepted), JSON.stringify(writes("curator-mutex"))).to.deep.equal([true]);
    expect(writes("redsync").map((w) => w.accepted), JSON.stringify(writes("redsync"))).to.deep.equal([true]);
  });
});
