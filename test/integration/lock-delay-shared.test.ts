// Lock-delay and shared acquisitions together: a lock-delay holds up shared acquisitions as it holds up
// exclusive ones, and a shared acquisition cannot ask for one (shared holders do not write, and a
// lock-delay keeps writers out after a lost exclusive holder).
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { eventually, failure, uniqueResource, useServer } from "../harness/suite.js";

const secs = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const TTL_S = 2;
const DELAY_S = 3;
/** The resolution of Date.now(), and rounding between this process's clock and etcd's. */
const MARGIN_MS = 250;

describe("lock-delay with shared acquisitions", function () {
  this.timeout(60_000);
  const s = useServer(["--max-lock-delay", "10"]);

  it("a shared acquisition that asks for a lock-delay is INVALID_ARGUMENT and leaves nothing behind", async () => {
    const resource = uniqueResource("shared-delay");
    const err = await failure(s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "R", mode: AcquireMode.SHARED, lockDelay: secs(DELAY_S) }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/lock_delay must be unset with mode ACQUIRE_MODE_SHARED/);
    const d = await s.lease.describe({ resource });
    expect(d.held).to.equal(false);
    expect(d.waiters).to.equal(0);
  });

  it("a lock-delay after an exclusive holder's expiry holds up shared acquisitions: refused without wait, granted after it with wait", async () => {
    const resource = uniqueResource("delay-then-shared");
    // The exclusive holder asks for a lock-delay and never renews, as a paused holder would.
    const sentA = Date.now();
    const a = await s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
    await eventually(async () => (await s.lease.describe({ resource })).lockDelayUntil !== undefined, "the lock-delay starts at A's expiry", 15_000);

    const refused = await failure(s.lease.acquire({ resource, ttl: secs(10), holder: "R1", mode: AcquireMode.SHARED }));
    expect(refused.code).to.equal(Code.Aborted);
    expect(refused.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("LOCK_DELAY");

    // Two shared waiters: both are granted once the delay ends, and co-hold, each with its own generation.
    const waiters = ["R2", "R3"].map((holder) => s.lease.acquire({ resource, ttl: secs(10), holder, mode: AcquireMode.SHARED, wait: true }, { timeoutMs: 30_000 }));
    const granted = await Promise.all(waiters);
    const grantedAt = Date.now();
    expect(grantedAt, "not before the delay ends").to.be.at.least(sentA + (TTL_S + DELAY_S) * 1000 - MARGIN_MS);
    const generations = granted.map((g) => g.token!.generation);
    expect(new Set(generations).size).to.equal(2);
    for (const g of generations) expect(g > a.token!.generation).to.equal(true);
    const d = await s.lease.describe({ resource });
    expect(d.holders.map((h) => h.holder).sort()).to.deep.equal(["R2", "R3"]);
    expect(d.lockDelayUntil).to.equal(undefined);
    for (const g of granted) await s.lease.release({ token: g.token });
  });
});
