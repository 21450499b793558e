// The SDK's counting semaphore helper: semaphore(resource, n) waits in line for a permit and hands back a
// lease with its loss signal; N mismatches are typed; Describe and Observe say N. Against a real server.
import { expect } from "chai";
import { FencekeeperClient, FencekeeperError, InvalidArgumentError, LeaseLostError, ResourceHeldError } from "../../client/index.js";
import { eventually, uniqueResource, useServer, within } from "../harness/suite.js";

describe("client: semaphores", () => {
  const s = useServer(["--metrics-listen", "off"]);
  const clients: FencekeeperClient[] = [];
  // Leases of their own unless a test asks for sessions: the tests run each way.
  const client = (o: { sessions?: boolean } = {}) => {
    const fk = new FencekeeperClient({ servers: s.server.url, holder: `worker-${clients.length}`, sessions: false, ...o });
    clients.push(fk);
    return fk;
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  for (const sessions of [false, true]) {
    it(`semaphore(resource, 2) grants two permits, and a third waits until one is released${sessions ? " (on sessions)" : ""}`, async () => {
      const resource = uniqueResource("sdk-sem");
      const [a, b, c] = [client({ sessions }), client({ sessions }), client({ sessions })];
      const p1 = await a.semaphore(resource, 2, { ttl: 3000 });
      const p2 = await b.semaphore(resource, 2, { ttl: 3000 });
      expect(p1.token.shared).to.equal(true);
      expect(p2.token.generation > p1.token.generation).to.equal(true);
      const third = c.semaphore(resource, 2, { ttl: 3000 });
      await eventually(async () => (await a.describe(resource)).waiters === 1, "the third waits");
      expect(await within(third.then(() => "granted"), 300, "waiting")).to.equal("waiting");
      const d = await a.describe(resource);
      expect(d.maxHolders).to.equal(2);
      expect(d.holders.map((h) => h.holder)).to.deep.equal(["worker-0", "worker-1"]);
      await p1.release();
      const p3 = await third;
      expect(p3.held).to.equal(true);
      expect((await a.describe(resource)).holders.map((h) => h.holder)).to.deep.equal(["worker-1", "worker-2"]);
      await Promise.all([p2.release(), p3.release()]);
    });
  }

  it("without wait, a full semaphore is a ResourceHeldError; another N is MAX_HOLDERS_MISMATCH; n < 1 is refused", async () => {
    const resource = uniqueResource("sdk-sem-full");
    const fk = client();
    const p = await fk.semaphore(resource, 1);
    const full = await fk.semaphore(resource, 1, { wait: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(full).to.be.instanceOf(ResourceHeldError);
    expect((full as FencekeeperError).reason).to.equal("RESOURCE_HELD");
    const other = await fk.semaphore(resource, 4).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(other).to.be.instanceOf(FencekeeperError);
    expect((other as FencekeeperError).reason).to.equal("MAX_HOLDERS_MISMATCH");
    expect((other as FencekeeperError).message).to.include("max_holders 1");
    const zero = await fk.semaphore(resource, 0).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(zero).to.be.instanceOf(InvalidArgumentError);
    await p.release();
  });

  it("a permit's signal is aborted when its lease is lost, and its place goes to the next in line", async function () {
    this.timeout(30_000);
    const resource = uniqueResource("sdk-sem-lost");
    const [a, b] = [client(), client()];
    const permit = await a.semaphore(resource, 1, { ttl: 2000 });
    const next = b.semaphore(resource, 1, { ttl: 2000 });
    await eventually(async () => (await a.describe(resource)).waiters === 1, "b waits");
    // The permit's lease ends behind the client's back (an operator's, or another server's, release).
    const d = await s.lease.describe({ resource });
    await s.lease.release({ token: d.holders[0].token });
    await eventually(() => permit.signal.aborted, "the permit's signal is aborted", 10_000);
    expect(permit.signal.reason).to.be.instanceOf(LeaseLostError);
    const granted = await next;
    expect(granted.held).to.equal(true);
    await granted.release();
  });

  it("observe says N", async () => {
    const resource = uniqueResource("sdk-sem-observe");
    const fk = client();
    const ctl = new AbortController();
    const it = fk.observe(resource, { signal: ctl.signal })[Symbol.asyncIterator]();
    try {
      expect((await it.next()).value.maxHolders).to.equal(0);
      const p = await fk.semaphore(resource, 3);
      expect((await it.next()).value.maxHolders).to.equal(3);
      await p.release();
    } finally {
      ctl.abort();
      await it.return(undefined);
    }
  });
});
