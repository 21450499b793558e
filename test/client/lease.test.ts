// The SDK's lease: token and deadline, renewal, release, fenced writes through the lease, withLease, and
// typed errors, against a real server and etcd.
import { expect } from "chai";
import {
  FencekeeperClient,
  InvalidArgumentError,
  LeaseLostError,
  LeaseNotHeldError,
  ResourceHeldError,
  StaleTokenError,
  TimeoutError,
  type ClientEvent,
} from "../../client/index.js";
import { shownToOthers } from "../harness/clients.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

describe("client: leases", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let fk: FencekeeperClient;
  let events: ClientEvent[];
  beforeEach(() => {
    events = [];
    // Leases of their own: the per-lease renewals and losses these tests follow (sessions.test.ts: sessions).
    fk = new FencekeeperClient({ servers: s.server.url, holder: "tester", sessions: false, onEvent: (e) => events.push(e) });
  });
  afterEach(() => fk.close());

  it("acquire gives the token, and validUntil counts from the send of the Acquire: sent + TTL - drift", async () => {
    const resource = uniqueResource("acquire");
    const before = Date.now();
    const lease = await fk.acquire(resource, { ttl: 3000 });
    const after = Date.now();
    expect(lease.token.resource).to.equal(resource);
    expect(lease.ttlMs).to.equal(3000);
    const drift = 100 + 3000 / 100;
    expect(lease.validUntil.getTime()).to.be.within(before + 3000 - drift - 1, after + 3000 - drift);
    expect(lease.held).to.equal(true);
    const d = await fk.describe(resource);
    expect(d).to.deep.include({ held: true, holder: "tester" });
    expect(shownToOthers(d.token!)).to.deep.equal(shownToOthers(lease.token));
    expect(d.token!.signature ?? new Uint8Array(), "no signature for a caller not known to be the principal").to.have.length(0);
  });

  it("renews on the KeepAlive stream, each renewal moving validUntil to its send + TTL - drift", async () => {
    const resource = uniqueResource("renew");
    const lease = await fk.acquire(resource, { ttl: 2000 });
    await sleep(2500); // longer than the TTL: only renewals keep it
    expect(lease.held).to.equal(true);
    const renewals = events.filter((e): e is Extract<ClientEvent, { type: "renewed" }> => e.type === "renewed");
    expect(renewals.length).to.be.within(3, 5);
    // validUntil is counted on the monotonic clock and shown on the wall clock, sentAt read from the wall
    // clock: the two can move apart by a few milliseconds (rounding, a clock being slewed).
    for (const r of renewals) {
      expect(r.validUntil.getTime()).to.be.closeTo(r.sentAt.getTime() + 2000 - (100 + 2000 / 100), 10);
      expect(r.confirmedAt.getTime()).to.be.at.least(r.sentAt.getTime());
    }
    expect(lease.validUntil.getTime()).to.be.closeTo(renewals.at(-1)!.validUntil.getTime(), 10);
    expect(lease.lastConfirmedAt.getTime()).to.equal(renewals.at(-1)!.confirmedAt.getTime());
  });

  it("release ends the lease at once, aborts its signal, and is idempotent", async () => {
    const resource = uniqueResource("release");
    const lease = await fk.acquire(resource, { ttl: 5000 });
    const signal = lease.signal;
    await Promise.all([lease.release(), lease.release()]);
    await lease.release();
    expect(signal.aborted).to.equal(true);
    expect(signal.reason).to.be.instanceOf(LeaseLostError).and.include({ why: "released" });
    expect((await fk.describe(resource)).held).to.equal(false);
    expect(() => lease.check()).to.throw(LeaseLostError);
    const err = await lease.put("k", "v").catch((e) => e);
    expect(err).to.be.instanceOf(LeaseLostError);
    expect((await fk.store.get(resource, "k")).found).to.equal(false);
  });

  it("writes through a lease carry its token, and a refusal by the fence ends the lease", async () => {
    const resource = uniqueResource("fenced");
    const first = await fk.acquire(resource, { ttl: 5000 });
    const put = await first.put("k", "one");
    expect(put.fence).to.equal(first.token.generation);
    const other = new FencekeeperClient({ servers: s.server.url });
    try {
      // A newer generation writes while `first` still believes it holds the lease (its key is released
      // behind its back by the test, as an expiry would).
      await s.lease.release({ token: { ...first.token } });
      const second = await other.acquire(resource, { ttl: 5000 });
      await second.put("k", "two");
      const err = await first.put("k", "stale", { mode: "order" }).catch((e) => e);
      expect(err).to.be.instanceOf(StaleTokenError);
      expect(err).to.include({ fence: second.token.generation, generation: first.token.generation, reason: "STALE_TOKEN" });
      expect(first.held).to.equal(false);
      expect(first.signal.reason).to.include({ why: "fenced" });
      expect((first.signal.reason as LeaseLostError).cause).to.equal(err);
      expect(new TextDecoder().decode((await fk.store.get(resource, "k")).value)).to.equal("two");
    } finally {
      await other.close();
    }
  });

  it("the renewal answer NOT_FOUND ends the lease with why 'not-found'", async () => {
    const resource = uniqueResource("revoked");
    const lease = await fk.acquire(resource, { ttl: 2000 });
    await s.lease.release({ token: { ...lease.token } }); // gone behind the holder's back
    await eventually(() => !lease.held, "the lease ends at its next renewal", 2000);
    expect(lease.signal.reason).to.include({ why: "not-found" });
    const err = await lease.put("k", "v", { mode: "live" }).catch((e) => e);
    expect(err).to.be.instanceOf(LeaseLostError);
  });

  it("LIVE writes of a token whose lease is gone are refused with LeaseNotHeldError", async () => {
    const resource = uniqueResource("live");
    const lease = await fk.acquire(resource, { ttl: 5000 });
    await lease.release();
    const err = await fk.store.put(lease.token, "k", "v", { mode: "live" }).catch((e) => e);
    expect(err).to.be.instanceOf(LeaseNotHeldError);
    expect(err).to.include({ leaseId: lease.token.leaseId, generation: lease.token.generation });
  });

  it("a held resource: ResourceHeldError with the holder's token; waiting gets it at release, with a greater token", async () => {
    const resource = uniqueResource("held");
    const first = await fk.acquire(resource, { ttl: 5000 });
    const err = await fk.acquire(resource, { ttl: 5000 }).catch((e) => e);
    expect(err).to.be.instanceOf(ResourceHeldError);
    expect(err.holder).to.equal("tester");
    expect(shownToOthers(err.holderToken!)).to.deep.equal(shownToOthers(first.token));
    const timedOut = await fk.acquire(resource, { ttl: 5000, wait: 300 }).catch((e) => e);
    expect(timedOut).to.be.instanceOf(TimeoutError);
    const waiting = fk.acquire(resource, { ttl: 5000, wait: true });
    await sleep(200);
    await first.release();
    const second = await waiting;
    expect(second.token.generation > first.token.generation).to.equal(true);
    expect(second.held).to.equal(true);
  });

  it("a lease granted after a long wait is confirmed by a renewal and handed out with most of its TTL", async () => {
    const resource = uniqueResource("long-wait");
    const first = await fk.acquire(resource, { ttl: 2000 });
    const waiting = fk.acquire(resource, { ttl: 2000, wait: true });
    await sleep(2500); // longer than the TTL, counted from the Acquire's send
    await first.release();
    const second = await waiting;
    expect(second.held).to.equal(true);
    expect(second.validUntil.getTime() - Date.now()).to.be.above(1500);
  });

  it("aborting the acquire signal cancels a waiting acquire, and releases a granted lease", async () => {
    const resource = uniqueResource("signal");
    const first = await fk.acquire(resource, { ttl: 5000 });
    const stop = new AbortController();
    const waiting = fk.acquire(resource, { ttl: 5000, wait: true, signal: stop.signal }).catch((e) => e);
    await sleep(200);
    stop.abort();
    expect((await waiting).name).to.equal("CanceledError");
    await eventually(async () => (await fk.describe(resource)).waiters === 0, "the canceled waiter leaves the line");
    await first.release();

    const scope = new AbortController();
    const lease = await fk.acquire(resource, { ttl: 5000, signal: scope.signal });
    scope.abort();
    expect(lease.signal.reason).to.include({ why: "canceled" });
    await lease.release();
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("withLease runs fn with the lease and its signal, and releases afterwards", async () => {
    const resource = uniqueResource("with");
    const result = await fk.withLease(
      resource,
      async (lease, signal) => {
        expect(signal.aborted).to.equal(false);
        expect(shownToOthers((await fk.describe(resource)).token!)).to.deep.equal(shownToOthers(lease.token));
        await lease.put("k", "v");
        return 42;
      },
      { ttl: 3000 },
    );
    expect(result).to.equal(42);
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("withLease releases when fn throws, and rethrows fn's error", async () => {
    const resource = uniqueResource("with-throw");
    let seen: AbortSignal | undefined;
    const err = await fk
      .withLease(resource, async (_lease, signal) => {
        seen = signal;
        throw new Error("boom");
      })
      .catch((e) => e);
    expect(err.message).to.equal("boom");
    expect(seen!.aborted).to.equal(true);
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("withLease rejects with LeaseLostError when the lease was lost before fn returned", async () => {
    const resource = uniqueResource("with-lost");
    const err = await fk
      .withLease(
        resource,
        async (lease) => {
          await s.lease.release({ token: { ...lease.token } });
          await eventually(() => !lease.held, "the holder learns of the loss", 2000);
          return "done anyway";
        },
        { ttl: 2000 },
      )
      .catch((e) => e);
    expect(err).to.be.instanceOf(LeaseLostError);
    expect(err.why).to.equal("not-found");
  });

  it("bad input comes back as InvalidArgumentError", async () => {
    const err = await fk.acquire("", { ttl: 5000 }).catch((e) => e);
    expect(err).to.be.instanceOf(InvalidArgumentError);
    expect(err.message).to.match(/resource/);
  });
});
