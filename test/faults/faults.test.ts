// The short fault profile: random operations from eight clients (plain gRPC and the SDK, half of them
// through fault proxies; two named by their client certificate, the others by a JWT; one also misusing
// another principal's tokens) on two replicas and a 3-member etcd cluster, each in a network namespace
// of its own, every fault of the nemesis at least once (two of them partitions between etcd and the
// replicas, a KeepAlive flood by another caller, etcd filled to its quota; some of them at the same
// time), and the checker's verdict on the whole history: no violation of any property, no wrong refusal,
// and a floor of acknowledged operations of each kind.
// The seed (fixed; FAULTS_SEED=<seed> replays another run's choices) is printed first.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { MTLS_CLIENTS } from "./auth.js";
import { PROPERTIES, type Property } from "./checker.js";
import { isWrite } from "./history.js";
import { overlapsOf, runProfile, SHORT, type RunResult } from "./profile.js";
import { belowFloors, floodRenewals, report, totalViolations } from "./report.js";
import { saveRun } from "./saved-run.js";

describe("faults: the short profile", function () {
  this.timeout(600_000);
  // A fixed seed, so that every run of the suite makes the same choices; FAULTS_SEED tries others.
  const seed = Number(process.env.FAULTS_SEED ?? 11);
  let run: RunResult;

  before(async function () {
    console.log(`      fault run seed ${seed} (FAULTS_SEED=${seed} reproduces it)`);
    run = await runProfile({ ...SHORT, seed });
    console.log("      the schedule of faults (start to end, since the run began: nemesis on target: what):");
    console.log(run.faultLog.join("\n").replace(/^/gm, "        "));
    console.log(report(run).replace(/^/gm, "      "));
    const flood = floodRenewals(run).aloneCounts;
    if (totalViolations(run) > 0 || belowFloors(run).length > 0 || flood.fail + flood.ambiguous > 0) {
      const file = join(tmpdir(), `fencekeeper-faults-${seed}.jsonl`);
      saveRun(file, run.ops, run.truth, run.resources, run.schedule);
      console.log(`      the history of this run: ${file} (recheck: npm run faults -- --recheck ${file})`);
    }
  });

  it(`runs at least ${SHORT.ops} operations and injects every fault`, () => {
    expect(run.ops.length).to.be.at.least(SHORT.ops);
    for (const [kind, n] of run.faults) expect(n, kind).to.be.at.least(1);
    // Faults bite: some writes were refused, some answers were ambiguous or failed over.
    expect(run.check.writes.refused).to.be.greaterThan(0);
    expect(run.check.refusalsJudged).to.be.greaterThan(0);
    // Every client authenticated with a JWT, and the policy refused some writes (each judged against it).
    expect(run.check.policyRefusals).to.be.greaterThan(0);
    // A client wrote and renewed under another principal's token, and the holder binding refused it (NOT_HOLDER), each judged against who acquired it.
    expect(run.check.bindingRefusals).to.be.greaterThan(0);
    // The clients named by their client certificate (mutual TLS, no token) acquired and wrote, under the same policy.
    for (const c of MTLS_CLIENTS) {
      expect(run.ops.filter((o) => o.client === c && o.kind === "acquire" && o.outcome === "ok").length, `${c}'s acquisitions`).to.be.greaterThan(0);
      expect(run.ops.filter((o) => o.client === c && isWrite(o) && o.outcome === "ok").length, `${c}'s writes`).to.be.greaterThan(0);
    }
    // Writes sent several at once (explicit Batch calls, and concurrent writes the SDK coalesces) were acknowledged, each judged on its own.
    expect(run.ops.filter((o) => o.batch && o.outcome === "ok").length, "writes of explicit Batch calls acknowledged").to.be.greaterThan(0);
    expect(run.ops.filter((o) => o.coalesced && o.outcome === "ok").length, "concurrent SDK writes acknowledged").to.be.greaterThan(0);
    // etcd filled to its quota refused some calls for its space (each judged against the fault's span).
    expect(run.ops.filter((o) => o.reason === "ETCD_NO_SPACE").length, "calls refused ETCD_NO_SPACE").to.be.greaterThan(0);
    // Some resources were acquired together, all or nothing (AcquireAll), and judged each on its own.
    expect(run.ops.filter((o) => o.kind === "acquire" && o.all && o.outcome === "ok").length, "resources acquired by AcquireAll").to.be.greaterThan(0);
    // Some Acquires preempted their resource's holder (docs/preemption.md).
    expect(run.ops.filter((o) => o.kind === "acquire" && o.preempt && o.outcome === "ok").length).to.be.greaterThan(0);
  });

  it("loses no lease to a KeepAlive flood: the renewals of live leases during a flood alone are all answered ok", () => {
    const f = floodRenewals(run);
    expect(f.aloneCounts.fail + f.aloneCounts.ambiguous, `${f.aloneCounts.fail} refused, ${f.aloneCounts.ambiguous} ambiguous: ${f.reasons.join("; ")}`).to.equal(0);
  });

  it("takes writes again within 5 s of each heal of etcd's quota", () => {
    for (const f of run.schedule.filter((x) => x.nemesis === "etcd-quota")) {
      const after = run.ops.filter((o) => isWrite(o) && o.outcome === "ok" && o.t0 >= f.end).map((o) => o.t1 - f.end);
      expect(Math.min(...after), `the first write acknowledged after the heal at ${f.end}`).to.be.below(5_000);
    }
  });

  it("overlaps faults: at least two run at the same time", () => {
    expect(overlapsOf(run.schedule)).to.be.at.least(1);
  });

  it("reaches the floor of acknowledged operations of each kind (a server that refuses what it should accept falls below)", () => {
    expect(belowFloors(run), "kind ok/floor").to.deep.equal([]);
  });

  it("reads with the checker's own layout what the real servers wrote (grants, fences, values)", () => {
    expect(run.check.violations.layout.count, run.check.violations.layout.first).to.equal(0);
    expect(run.check.grants).to.be.greaterThan(0);
    expect(run.check.writes.acknowledged).to.be.greaterThan(0);
  });

  for (const p of Object.keys(PROPERTIES) as Property[]) {
    it(`${p}: ${PROPERTIES[p]}`, () => {
      const v = run.check.violations[p];
      expect(v.count, `${v.count} violations, the first: ${v.first}`).to.equal(0);
    });
  }
});
