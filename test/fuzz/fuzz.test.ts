// The short fuzz run of `npm test`: about 4,000 generated and mutated requests (valid, malformed, out of
// range) through both servers, without and with authentication, over every wire protocol; then each
// invariant must have held. The cases depend on the seed alone: the seed is printed, and FUZZ_SEED=<seed>
// runs the same cases again (FUZZ_TEST_REQUESTS changes how many). The long run is `npm run fuzz`
// (scripts/fuzz.sh); docs/fuzzing.md says what is sent and checked.
import { expect } from "chai";
import { INVARIANTS, type Findings, type Invariant } from "./findings.js";
import { runFuzz } from "./run.js";

const SEED = Number(process.env.FUZZ_SEED ?? 20261203);
const REQUESTS = Number(process.env.FUZZ_TEST_REQUESTS ?? 4000);

describe(`fuzz: ${REQUESTS} generated requests through a server without and one with authentication (seed ${SEED})`, function () {
  // Generous: on a loaded machine the run takes far longer than the ~20 s it takes on a quiet one.
  this.timeout(900_000);
  let findings: Findings;

  before(async function () {
    this.timeout(900_000);
    process.stdout.write(`      fuzz seed ${SEED}: FUZZ_SEED=${SEED} runs these cases again\n`);
    ({ findings } = await runFuzz({ requests: REQUESTS, seed: SEED }));
    process.stdout.write(findings.table().replace(/^/gm, "      ") + "\n");
  });

  for (const [inv, text] of Object.entries(INVARIANTS) as [Invariant, string][]) {
    it(text, () => {
      const c = findings.checks.get(inv)!;
      expect(c.checked, "checked at least once").to.be.greaterThan(0);
      expect(c.broken, `${c.broken} of ${c.checked} broken (seed ${SEED}); the first:\n${c.first}\n`).to.equal(0);
    });
  }
});
