// The TypeScript SDK's side of preemption (docs/preemption.md): acquire(..., { preempt: true }) takes a
// held resource at once, and the preempted lease's signal aborts with why "preempted" and a
// PreemptedError naming the new generation; its writes are refused from the preemption on.
import { expect } from "chai";
import { FencekeeperClient, LeaseLostError, PreemptedError, StaleTokenError } from "../../client/index.js";
import { uniqueResource, useServer, within } from "../harness/suite.js";

describe("client: preemption", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let old: FencekeeperClient;
  let orchestrator: FencekeeperClient;
  beforeEach(() => {
    old = new FencekeeperClient({ servers: s.server.url, holder: "old" });
    orchestrator = new FencekeeperClient({ servers: s.server.url, holder: "new" });
  });
  afterEach(async () => {
    await Promise.all([old.close(), orchestrator.close()]);
  });

  it("preempt: true takes the resource; the old lease is lost with why preempted and a PreemptedError cause", async () => {
    const resource = uniqueResource("sdk-preempt");
    const held = await old.acquire(resource, { ttl: 3000 });
    await held.put("doc", "from-old");
    const taken = await orchestrator.acquire(resource, { ttl: 10_000, preempt: true });
    expect(taken.token.generation > held.token.generation).to.equal(true);

    // The token alone (as a program that ignored its lease's signal would) is refused at once.
    const refused = await old.store.put(held.token, "doc", "late").catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(StaleTokenError);

    // Told at its next renewal (every third of the TTL).
    const lost = await within(new Promise<LeaseLostError>((resolve) => held.signal.addEventListener("abort", () => resolve(held.signal.reason), { once: true })), 3000, undefined);
    expect(lost, "the old lease was lost within a renewal interval").to.be.instanceOf(LeaseLostError);
    expect(lost!.why).to.equal("preempted");
    expect(lost!.cause).to.be.instanceOf(PreemptedError);
    const cause = lost!.cause as PreemptedError;
    expect(cause.reason).to.equal("PREEMPTED");
    expect(cause.byGeneration).to.equal(taken.token.generation);
    expect(cause.generation).to.equal(held.token.generation);
    expect(cause.resource).to.equal(resource);
    expect(lost!.message).to.match(/was preempted \(now generation \d+\)/);
    await taken.release();
  });
});
