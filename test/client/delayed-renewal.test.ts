// Renewal answers held back past the deadline by a slow network (a delaying TCP proxy): the server
// renews, but the client cannot know in time, so it reports the lease lost at validUntil, and the
// answers that come later change nothing. Answers that slow down past a renewal interval but keep coming
// keep the stream: it is a slow server, not a hung one.
import { expect } from "chai";
import { FencekeeperClient, LeaseLostError, type ClientEvent, type Lease } from "../../client/index.js";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

describe("client: renewal answers that come too late", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let proxy: DelayProxy;
  let fk: FencekeeperClient;
  let events: { at: number; e: ClientEvent }[];
  beforeEach(async () => {
    proxy = await startDelayProxy(s.server.url);
    events = [];
    // Leases of their own: the per-lease renewals these tests follow (sessions.test.ts: sessions).
    fk = new FencekeeperClient({ servers: proxy.url, sessions: false, onEvent: (e) => events.push({ at: Date.now(), e }) });
  });
  afterEach(async () => {
    await fk.close();
    await proxy.close();
  });

  it("are reported as loss at validUntil, and never revive the lease", async () => {
    const ttl = 2000;
    const resource = uniqueResource("late");
    const lease = await fk.acquire(resource, { ttl });
    await eventually(() => events.some(({ e }) => e.type === "renewed"), "a renewal is confirmed", ttl);

    proxy.setDelay(ttl + 1000, "toClient"); // renewals reach the server; their answers arrive a TTL late
    const delayedAt = Date.now();
    const lostAt = await new Promise<number>((resolve) => lease.signal.addEventListener("abort", () => resolve(Date.now()), { once: true }));

    const reason = lease.signal.reason as LeaseLostError;
    expect(reason).to.be.instanceOf(LeaseLostError);
    expect(reason.why).to.equal("deadline");
    // The deadline is the one the last renewal confirmed in time set.
    const last = events.filter(({ at, e }) => e.type === "renewed" && at <= lostAt).at(-1)!.e as Extract<ClientEvent, { type: "renewed" }>;
    const validUntil = reason.validUntil.getTime();
    expect(validUntil).to.be.closeTo(last.validUntil.getTime(), 2);
    // Aborted at validUntil, by its timer: not before, and not noticeably after.
    expect(lostAt).to.be.at.least(validUntil);
    expect(lostAt - validUntil).to.be.below(100);
    expect(lostAt - delayedAt).to.be.below(ttl);

    await sleep(ttl + 1500); // every held-back answer has arrived by now
    expect(lease.held).to.equal(false);
    expect(lease.validUntil.getTime()).to.be.closeTo(validUntil, 2);
    expect(events.filter(({ at, e }) => e.type === "renewed" && at > lostAt)).to.deep.equal([]);
    expect(() => lease.check()).to.throw(LeaseLostError);
  });

  it("that are slow but in time keep the lease, counted from each renewal's send, not its answer", async () => {
    const ttl = 2000;
    const resource = uniqueResource("slow");
    const lease = await fk.acquire(resource, { ttl });
    proxy.setDelay(400, "toClient");
    const from = Date.now();
    await sleep(ttl * 2);
    expect(lease.held).to.equal(true);
    const slow = events.flatMap(({ e }) => (e.type === "renewed" && e.sentAt.getTime() > from ? [e] : []));
    expect(slow.length).to.be.at.least(4);
    for (const r of slow) {
      expect(r.confirmedAt.getTime() - r.sentAt.getTime()).to.be.at.least(400);
      expect(r.validUntil.getTime()).to.be.closeTo(r.sentAt.getTime() + ttl - (100 + ttl / 100), 2);
    }
  });

  it("that slow down past a renewal interval, but keep coming, keep the stream and every lease", async function () {
    this.timeout(30_000);
    const ttl = 3000; // renewed every 1 s; each renewal must be confirmed within 2.87 s of its send
    const leases: Lease[] = [];
    for (let i = 0; i < 30; i++) {
      leases.push(await fk.acquire(uniqueResource("slowing"), { ttl }));
      await sleep(ttl / 3 / 30); // spread over a renewal interval: answers arrive all the time
    }
    // The answers slow down to 1.3 s, more than a renewal interval: a server that answers, only slowly.
    const from = Date.now();
    for (let delay = 50; delay <= 1300; delay += 50) {
      proxy.setDelay(delay, "toClient");
      await sleep(100);
    }
    await sleep(4000);
    expect(leases.filter((l) => !l.held)).to.deep.equal([]);
    expect(events.filter(({ e }) => e.type === "stream-failed" || e.type === "lost")).to.deep.equal([]);
    const slow = events.flatMap(({ at, e }) => (e.type === "renewed" && at > from + 3000 ? [e] : []));
    expect(slow.length).to.be.at.least(60);
    for (const r of slow) expect(r.confirmedAt.getTime() - r.sentAt.getTime()).to.be.above(ttl / 3);
  });
});
