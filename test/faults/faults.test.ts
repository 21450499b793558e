// The short fault profile: random operations from eight clients (plain gRPC and the SDK, half of them
// through fault proxies) on two replicas and a 3-member etcd cluster, each in a network namespace of its
// own, every fault of the nemesis at least once (two of them partitions between etcd and the replicas), and the checker's verdict on the whole history: no violation of any property.
// The seed (fixed; FAULTS_SEED=<seed> replays another run's choices) is printed first.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { PROPERTIES, type Property } from "./checker.js";
import { runProfile, SHORT, type RunResult } from "./profile.js";
import { report, totalViolations } from "./report.js";

describe("faults: the short profile", function () {
  this.timeout(600_000);
  // A fixed seed, so that every run of the suite makes the same choices; FAULTS_SEED tries others.
  const seed = Number(process.env.FAULTS_SEED ?? 11);
  let run: RunResult;

  before(async function () {
    console.log(`      fault run seed ${seed} (FAULTS_SEED=${seed} reproduces it)`);
    run = await runProfile({ ...SHORT, seed });
    console.log(report(run).replace(/^/gm, "      "));
    if (totalViolations(run) > 0) {
      const file = join(tmpdir(), `fencekeeper-faults-${seed}.jsonl`);
      writeFileSync(file, run.ops.map((op) => JSON.stringify(op)).join("\n") + "\n");
      console.log(`      the history of this run: ${file}`);
    }
  });

  it(`runs at least ${SHORT.ops} operations and injects every fault`, () => {
    expect(run.ops.length).to.be.at.least(SHORT.ops);
    for (const [kind, n] of run.faults) expect(n, kind).to.be.at.least(1);
    // Faults bite: some writes were refused, some answers were ambiguous or failed over.
    expect(run.check.writes.refused).to.be.greaterThan(0);
  });

  for (const p of Object.keys(PROPERTIES) as Property[]) {
    it(`${p}: ${PROPERTIES[p]}`, () => {
      const v = run.check.violations[p];
      expect(v.count, `${v.count} violations, the first: ${v.first}`).to.equal(0);
    });
  }
});
