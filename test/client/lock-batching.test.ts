// The SDK's locking defaults: acquisitions go on the client's session unless a lease of its own is asked
// for (or needed: a lock-delay, a preemption); concurrent acquisitions and releases of one client reach
// the server together in LeaseBatch calls, each with its own answer, while a waiting acquisition still
// waits in line; and acquireAll() takes several resources all or nothing.
import { expect } from "chai";
import { FencekeeperClient, ResourceHeldError, type Lease } from "../../client/index.js";
import { scrape } from "../operations/support/metrics.js";
import type { TestServer } from "../harness/server.js";
import { eventually, uniqueResource, useServer } from "../harness/suite.js";

/** Calls of a LeaseService method the server answered, by its metrics. */
async function handled(server: TestServer, method: string): Promise<number> {
  const m = await scrape(server);
  return m.samples.filter((x) => x.name === "grpc_server_handled_total" && x.labels.grpc_method === method).reduce((n, x) => n + x.value, 0);
}

describe("client: sessions by default, coalesced acquisitions and releases, acquireAll", () => {
  const s = useServer();
  let fk: FencekeeperClient;
  beforeEach(() => {
    fk = new FencekeeperClient({ servers: s.server.url, holder: "tester" });
  });
  afterEach(() => fk.close());

  it("puts acquisitions on the session by default; ownLease, lockDelay and sessions: false take leases of their own", async () => {
    expect(fk.sessions).to.equal(true);
    const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => uniqueResource(`default-${n}`));
    const first = await fk.acquire(a);
    const second = await fk.acquire(b);
    expect(second.token.leaseId, "one session for both").to.equal(first.token.leaseId);
    const own = await fk.acquire(c, { ownLease: true });
    expect(own.token.leaseId).to.not.equal(first.token.leaseId);
    const delayed = await fk.acquire(d, { lockDelay: 1000 });
    expect(delayed.token.leaseId, "a lock-delay needs a lease of its own").to.not.equal(first.token.leaseId);
    await own.release();
    expect(first.held && second.held, "releasing one lease of its own leaves the session's").to.equal(true);

    const plain = new FencekeeperClient({ servers: s.server.url, sessions: false });
    try {
      const [x, y] = ["x", "y"].map((n) => uniqueResource(`own-${n}`));
      const [lx, ly] = [await plain.acquire(x), await plain.acquire(y)];
      expect(plain.sessions).to.equal(false);
      expect(lx.token.leaseId).to.not.equal(ly.token.leaseId);
    } finally {
      await plain.close();
    }
  });

  it("sends a burst of acquisitions and then of releases in LeaseBatch calls, each answered on its own", async () => {
    const names = Array.from({ length: 40 }, (_, i) => uniqueResource(`burst-${i}`));
    const held = uniqueResource("burst-held");
    const other = new FencekeeperClient({ servers: s.server.url, holder: "other" });
    try {
      const holder = await other.acquire(held);
      await fk.acquire(uniqueResource("warm")); // the session is open: the burst below is acquisitions only
      const [batchesBefore, acquiresBefore] = [await handled(s.server, "LeaseBatch"), await handled(s.server, "Acquire")];
      const outcomes = await Promise.allSettled([...names, held].map((n) => fk.acquire(n)));
      const [batchesAfter, acquiresAfter] = [await handled(s.server, "LeaseBatch"), await handled(s.server, "Acquire")];
      const leases = outcomes.slice(0, names.length).map((o) => (o as PromiseFulfilledResult<Lease>).value);
      expect(leases.every((l) => l?.held)).to.equal(true);
      const refused = outcomes[names.length];
      expect(refused.status === "rejected" && refused.reason).to.be.instanceOf(ResourceHeldError);
      expect((refused as PromiseRejectedResult).reason.holderToken?.generation, "the holder's token, as Acquire alone gives it").to.equal(holder.token.generation);
      expect(batchesAfter - batchesBefore, "the burst went in LeaseBatch calls").to.be.at.least(1);
      expect(acquiresAfter - acquiresBefore + (batchesAfter - batchesBefore), "fewer calls than acquisitions").to.be.below(names.length);
      for (const [i, l] of leases.entries()) expect((await fk.describe(names[i])).token?.generation).to.equal(l.token.generation);

      const releasesBefore = await handled(s.server, "Release");
      const batchesBeforeRelease = await handled(s.server, "LeaseBatch");
      await Promise.all(leases.map((l) => l.release()));
      await eventually(async () => (await Promise.all(names.map((n) => fk.describe(n)))).every((d) => !d.held), "every lease released");
      const calls = (await handled(s.server, "Release")) - releasesBefore + ((await handled(s.server, "LeaseBatch")) - batchesBeforeRelease);
      expect(calls, "the releases went together").to.be.below(names.length);
    } finally {
      await other.close();
    }
  });

  it("an acquisition that waits, sent in a burst, still waits in line and is granted when the holder releases", async () => {
    const held = uniqueResource("wait-held");
    const other = new FencekeeperClient({ servers: s.server.url, holder: "other" });
    try {
      const holder = await other.acquire(held);
      const names = Array.from({ length: 10 }, (_, i) => uniqueResource(`wait-${i}`));
      const burst = names.map((n) => fk.acquire(n));
      const waiter = fk.acquire(held, { wait: 20_000 });
      await Promise.all(burst);
      await eventually(async () => (await fk.describe(held)).waiters === 1, "the waiter waits in line");
      await holder.release();
      const lease = await waiter;
      expect(lease.token.generation > holder.token.generation).to.equal(true);
      expect((await fk.describe(held)).token?.generation).to.equal(lease.token.generation);
    } finally {
      await other.close();
    }
  });

  for (const ownLease of [false, true]) {
    it(`acquireAll takes every resource or none (${ownLease ? "leases of their own" : "on the session"})`, async () => {
      const names = ["c", "a", "b"].map((n) => uniqueResource(`all-${n}`));
      const leases = await fk.acquireAll(names, { ownLease });
      expect(leases.map((l) => l.token.resource)).to.deep.equal(names);
      expect(new Set(leases.map((l) => l.token.leaseId)).size).to.equal(ownLease ? 3 : 1);
      for (const l of leases) expect((await fk.describe(l.token.resource)).token?.generation).to.equal(l.token.generation);

      const other = new FencekeeperClient({ servers: s.server.url, holder: "other" });
      try {
        const more = uniqueResource("all-more");
        const err = await other.acquireAll([more, names[1]], { ownLease }).catch((e) => e);
        expect(err).to.be.instanceOf(ResourceHeldError);
        expect((await fk.describe(more)).held, "nothing of the set is held").to.equal(false);
        // With wait, the set is taken once the first holder gives its resources back.
        const waiting = other.acquireAll([names[2], more, names[0]], { ownLease, wait: 20_000 });
        // Its first in the order of names is names[2] ("all-b-..."), held by the first client.
        await eventually(async () => (await fk.describe(names[2])).waiters === 1, "the other waits for the first of its set");
        await Promise.all(leases.map((l) => l.release()));
        const taken = await waiting;
        expect(taken.map((l) => l.token.resource)).to.deep.equal([names[2], more, names[0]]);
        expect(taken.every((l) => l.held)).to.equal(true);
      } finally {
        await other.close();
      }
    });
  }
});
