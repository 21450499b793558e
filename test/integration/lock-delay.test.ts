// Lock-delay: when a holder's lease expires, nobody is granted the resource for the delay its acquisition
// asked for; when it is released, the next one is granted at once. Each timeline lets a holder that asked
// for a lock-delay stop renewing, as a paused or partitioned one would, and watches what comes next.
//
// Timing: a holder's lease cannot expire before its TTL has passed since its last Acquire or renewal was
// sent, nor its delay lease before TTL + D. So the next grant is asserted to come no earlier than
// TTL + D after that send (less MARGIN_MS), a bound that a loaded machine only makes safer (without a
// delay, it comes about TTL after), and to come eventually; never with an upper bound.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { AcquireResponse, ObserveResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencekeeperClient, LockDelayError, ResourceHeldError, type LeaseLostError } from "../../client/index.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startDelayProxy } from "../harness/delay-proxy.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, sleep, uniqueResource, useServer } from "../harness/suite.js";
import { scrape } from "../operations/support/metrics.js";

const secs = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
/** The lock-delay of these timelines, and the holder's TTL. */
const DELAY_S = 3;
const TTL_S = 2;
/** The resolution of Date.now(), and rounding between this process's clock and etcd's. */
const MARGIN_MS = 250;
/** The earliest a resource whose holder's last Acquire or renewal was sent at `sentAt` may be granted again. */
const earliestGrant = (sentAt: number, delayS = DELAY_S) => sentAt + (TTL_S + delayS) * 1000 - MARGIN_MS;

/** Observes a resource in the background, stamping each message with when it arrived. */
function observing(c: Clients, resource: string) {
  const abort = new AbortController();
  const seen: { at: number; ev: ObserveResponse }[] = [];
  const done = (async () => {
    try {
      for await (const ev of c.lease.observe({ resource }, { signal: abort.signal })) seen.push({ at: Date.now(), ev });
    } catch {
      // ended by abort
    }
  })();
  return {
    seen,
    /** When the lock-delay began, as Observe reported it. */
    async delayStarted(timeoutMs = 15_000): Promise<{ at: number; ev: ObserveResponse }> {
      await eventually(() => seen.some((s) => s.ev.lockDelayUntil !== undefined), "Observe reports the lock-delay", timeoutMs);
      return seen.find((s) => s.ev.lockDelayUntil !== undefined)!;
    },
    async stop() {
      abort.abort();
      await done;
    },
  };
}

describe("lock-delay", function () {
  this.timeout(60_000);
  const s = useServer(["--max-lock-delay", "10"]);

  it("an expiry keeps the resource from a waiter for the delay; Describe and Observe show it", async () => {
    const resource = uniqueResource("expiry-waiter");
    const obs = observing(s, resource);
    await eventually(() => obs.seen.length === 1, "Observe's first message");
    // A asks for a lock-delay, and never renews: it is a holder that was paused or cut off.
    const sentA = Date.now();
    const a = await s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
    expect(a.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    const held = await s.lease.describe({ resource });
    expect(held.held).to.equal(true);
    expect(held.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    expect(held.lockDelayUntil).to.equal(undefined);

    let grantedAt = 0;
    const b = s.lease.acquire({ resource, ttl: secs(10), holder: "B", wait: true }, { timeoutMs: 30_000 }).then((r) => {
      grantedAt = Date.now();
      return r;
    });
    const started = await obs.delayStarted();
    expect(started.ev.held).to.equal(false);
    expect(started.ev.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    const until = timestampDate(started.ev.lockDelayUntil!).getTime();
    expect(until).to.be.greaterThan(started.at - 2000);

    // During the delay: Describe shows it, with B waiting.
    const during = await s.lease.describe({ resource });
    if (grantedAt === 0) {
      expect(during.held).to.equal(false);
      expect(during.waiters).to.equal(1);
      expect(during.lockDelayUntil).to.not.equal(undefined);
      expect(during.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    }

    const granted = await b;
    console.log(
      `      lock-delay ${DELAY_S} s, TTL ${TTL_S} s: B granted ${grantedAt - sentA} ms after A's Acquire was sent, ` +
        `${grantedAt - started.at} ms after Observe reported A's expiry (lock_delay_until said ${until - started.at} ms)`,
    );
    expect(grantedAt).to.be.at.least(earliestGrant(sentA));
    expect(granted.token!.generation > a.token!.generation).to.equal(true);
    await eventually(() => obs.seen.length === 4, "Observe reports B's grant");
    await obs.stop();
    expect(obs.seen.map(({ ev }) => [ev.held, ev.holder, ev.lockDelayUntil !== undefined])).to.deep.equal([
      [false, "", false],
      [true, "A", false],
      [false, "", true],
      [true, "B", false],
    ]);
    expect(obs.seen[1].ev.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    expect(obs.seen[3].ev.lockDelay).to.equal(undefined);
    expect((await s.lease.describe({ resource })).lockDelay).to.equal(undefined);
  });

  it("an expiry refuses Acquire without wait (LOCK_DELAY, saying until when) for the delay, then grants it", async () => {
    const resource = uniqueResource("expiry-nowait");
    const obs = observing(s, resource);
    const sentA = Date.now();
    const a = await s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
    const started = await obs.delayStarted();
    await obs.stop();

    const refusal = await failure(s.lease.acquire({ resource, ttl: secs(5), holder: "B" }));
    const refusedAt = Date.now();
    expect(refusal.code).to.equal(Code.Aborted);
    const info = refusal.findDetails(ErrorInfoSchema)[0];
    expect(info.reason).to.equal("LOCK_DELAY");
    expect(info.metadata).to.include({ resource, generation: String(a.token!.generation) });
    expect(refusal.rawMessage).to.match(/lock-delay until about \d{4}-\d\d-\d\dT/);
    expect(refusal.rawMessage).to.match(/with wait set/);
    const until = new Date(info.metadata.lock_delay_until).getTime();
    expect(until).to.be.greaterThan(refusedAt - 1500);

    // Tried again and again without wait: refused LOCK_DELAY (and only that) until the delay ends.
    let granted;
    for (;;) {
      const outcome = await s.lease.acquire({ resource, ttl: secs(5), holder: "B" }).catch((e) => ConnectError.from(e));
      if (!(outcome instanceof ConnectError)) {
        granted = outcome;
        break;
      }
      expect(outcome.findDetails(ErrorInfoSchema)[0].reason).to.equal("LOCK_DELAY");
      expect(Date.now() - started.at).to.be.below(30_000);
      await sleep(100);
    }
    expect(Date.now()).to.be.at.least(earliestGrant(sentA));
    expect(granted.token!.generation > a.token!.generation).to.equal(true);
  });

  it("a release does not delay: the next Acquire, waiting or not, is granted at once", async () => {
    const resource = uniqueResource("release");
    const a = await s.lease.acquire({ resource, ttl: secs(5), holder: "A", lockDelay: secs(10) });
    const b = s.lease.acquire({ resource, ttl: secs(5), holder: "B", wait: true }, { timeoutMs: 30_000 });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "B waits");
    await s.lease.release({ token: a.token });
    // Granted well before the 10 s delay a expiry would have cost (an upper bound far from any timing).
    const granted = await b;
    const after = await s.lease.describe({ resource });
    expect(after.holder).to.equal("B");
    expect(after.lockDelay).to.equal(undefined);
    await s.lease.release({ token: granted.token });
    // And one without wait, right after a release of a holder with a lock-delay.
    const c = await s.lease.acquire({ resource, ttl: secs(5), holder: "C", lockDelay: secs(10) });
    await s.lease.release({ token: c.token });
    const free = await s.lease.describe({ resource });
    expect(free.held).to.equal(false);
    expect(free.lockDelayUntil).to.equal(undefined);
    const d = await s.lease.acquire({ resource, ttl: secs(5), holder: "D" });
    expect(d.token!.generation > c.token!.generation).to.equal(true);
    // A release after the expiry is too late: NOT_FOUND, and the delay stays.
    const e = await s.lease.acquire({ resource: `${resource}-late`, ttl: secs(TTL_S), holder: "E", lockDelay: secs(DELAY_S) });
    await eventually(async () => (await s.lease.describe({ resource: `${resource}-late` })).lockDelayUntil !== undefined, "E expired", 15_000);
    expect((await failure(s.lease.release({ token: e.token }))).code).to.equal(Code.NotFound);
    expect((await s.lease.describe({ resource: `${resource}-late` })).lockDelayUntil).to.not.equal(undefined);
  });

  it("waiters are granted in order once the delay ends", async () => {
    const resource = uniqueResource("order");
    const sentA = Date.now();
    await s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
    const order: string[] = [];
    const waiter = (name: string) =>
      s.lease.acquire({ resource, ttl: secs(10), holder: name, wait: true }, { timeoutMs: 40_000 }).then(async (r) => {
        order.push(name);
        await s.lease.release({ token: r.token });
        return Date.now();
      });
    const w1 = waiter("w1");
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "w1 waits");
    const w2 = waiter("w2");
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 2, "w2 waits");
    const w3 = waiter("w3");
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 3, "w3 waits");
    const [first] = await Promise.all([w1, w2, w3]);
    expect(order).to.deep.equal(["w1", "w2", "w3"]);
    expect(first).to.be.at.least(earliestGrant(sentA));
  });

  it("refuses a lock-delay above the maximum, a negative one, and one on a session, naming what is allowed", async () => {
    const resource = uniqueResource("refused");
    const above = await failure(s.lease.acquire({ resource, ttl: secs(5), lockDelay: secs(11) }));
    expect(above.code).to.equal(Code.InvalidArgument);
    expect(above.rawMessage).to.match(/lock_delay 11s is above the maximum; allowed: 0s \(none\) to 10s.*--max-lock-delay/);
    const negative = await failure(s.lease.acquire({ resource, ttl: secs(5), lockDelay: { seconds: -1n, nanos: 0 } }));
    expect(negative.code).to.equal(Code.InvalidArgument);
    expect(negative.rawMessage).to.match(/lock_delay -1s is negative/);
    const session = await s.lease.openSession({ ttl: secs(5), holder: "S" });
    const onSession = await failure(s.lease.acquire({ resource, sessionId: session.sessionId, lockDelay: secs(2) }));
    expect(onSession.code).to.equal(Code.InvalidArgument);
    expect(onSession.rawMessage).to.match(/lock_delay must be unset with session_id/);
    await s.lease.closeSession({ sessionId: session.sessionId });
    // Nothing was granted, and a delay at the maximum is.
    expect((await s.lease.describe({ resource })).held).to.equal(false);
    const max = await s.lease.acquire({ resource, ttl: secs(5), lockDelay: { seconds: 9n, nanos: 500_000_000 } });
    expect(max.lockDelay).to.deep.include({ seconds: 10n });
    await s.lease.release({ token: max.token });
  });

  it("costs nothing without a delay; with one, a second lease, granted, renewed and revoked with the first", async () => {
    // The etcd calls the server made, by operation (its metrics), over what `act` does.
    const calls = async (act: () => Promise<unknown>, settled: (d: Record<string, number>) => boolean = () => true) => {
      const count = async () => {
        const m = await scrape(s.server);
        const by: Record<string, number> = {};
        for (const x of m.samples) {
          if (x.name === "fencekeeper_etcd_request_duration_seconds_count" && x.labels.operation !== "health probe") by[x.labels.operation] = (by[x.labels.operation] ?? 0) + x.value;
        }
        return by;
      };
      const before = await count();
      await act();
      let d: Record<string, number> = {};
      await eventually(async () => {
        const after = await count();
        d = Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
        return settled(d);
      }, "the background calls are done");
      return d;
    };
    const resource = uniqueResource("cost");
    // The server reads its token keys at its first grant, and opens its stream of renewals to etcd at
    // its first renewal: once, before counting.
    const warm = await s.lease.acquire({ resource: `${resource}-warm`, ttl: secs(5) });
    await s.lease.renew({ leaseId: warm.token!.leaseId });
    await calls(() => s.lease.release({ token: warm.token }), (d) => d["lease revoke"] === 1);
    let plain: AcquireResponse | undefined;
    // Without a delay: one lease grant and one transaction; a renewal is one etcd renewal; a release is
    // one transaction and one revoke.
    expect(await calls(async () => (plain = await s.lease.acquire({ resource, ttl: secs(5) })))).to.deep.equal({ "lease grant": 1, acquire: 1 });
    expect(await calls(() => s.lease.renew({ leaseId: plain!.token!.leaseId }))).to.deep.equal({ "lease renew": 1 });
    expect(await calls(() => s.lease.release({ token: plain!.token }), (d) => d["lease revoke"] === 1)).to.deep.equal({ release: 1, "lease revoke": 1 });
    // With one: two lease grants and still one transaction; two renewals; one transaction and two revokes.
    let delayed: AcquireResponse | undefined;
    expect(await calls(async () => (delayed = await s.lease.acquire({ resource, ttl: secs(5), lockDelay: secs(2) })))).to.deep.equal({ "lease grant": 2, acquire: 1 });
    expect(await calls(() => s.lease.renew({ leaseId: delayed!.token!.leaseId }))).to.deep.equal({ "lease renew": 2 });
    expect(await calls(() => s.lease.release({ token: delayed!.token }), (d) => d["lease revoke"] === 2)).to.deep.equal({ release: 1, "lease revoke": 2 });
  });

  it("the SDK: lockDelay, LockDelayError (a ResourceHeldError), and Describe's lockDelay/lockDelayUntil", async () => {
    const resource = uniqueResource("sdk");
    const fk = new FencekeeperClient({ servers: s.server.url });
    try {
      const lease = await fk.acquire(resource, { ttl: 5000, lockDelay: 2500 });
      expect((await fk.describe(resource)).lockDelay).to.equal(3000);
      await lease.release();
      expect((await fk.describe(resource)).held).to.equal(false);
      // A holder that stops renewing, by the raw API: the SDK sees the delay.
      await s.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
      await eventually(async () => (await fk.describe(resource)).lockDelayUntil !== undefined, "the delay begins", 15_000);
      const err = await fk.acquire(resource, { ttl: 5000 }).then(
        () => undefined,
        (e) => e,
      );
      expect(err).to.be.instanceOf(LockDelayError);
      expect(err).to.be.instanceOf(ResourceHeldError);
      expect((err as LockDelayError).until).to.be.instanceOf(Date);
      const waited = await fk.acquire(resource, { ttl: 5000, wait: 30_000 });
      expect(waited.held).to.equal(true);
      await waited.release();
    } finally {
      await fk.close();
    }
  });

  it("the SDK leaves a lease with a lock-delay that it lost at its deadline to expire, so that the delay applies", async () => {
    // The renewals' answers are held back: the SDK gives the lease up at its deadline while etcd still
    // has it. Without a lock-delay it would release it then, before etcd's expiry; with one, it does not.
    const resource = uniqueResource("sdk-deadline");
    const proxy = await startDelayProxy(s.server.url);
    const fk = new FencekeeperClient({ servers: proxy.url });
    try {
      const lease = await fk.acquire(resource, { ttl: TTL_S * 1000, lockDelay: DELAY_S * 1000 });
      proxy.setDelay(60_000, "toClient");
      await eventually(() => lease.signal.aborted, "the SDK gives the lease up at its deadline", 15_000);
      expect((lease.signal.reason as LeaseLostError).why).to.equal("deadline");
      await eventually(async () => (await s.lease.describe({ resource })).lockDelayUntil !== undefined, "the lease expires, into its lock-delay", 15_000);
    } finally {
      proxy.setDelay(0);
      await proxy.close();
      await fk.close();
    }
  });
});

describe("lock-delay across replicas", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;
  const servers: TestServer[] = [];
  const clients: Clients[] = [];
  const prefix = `/fk-lockdelay-${process.pid}/`;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    for (let i = 0; i < 2; i++) {
      servers.push(await startServer({ etcd: etcd.endpoint, prefix }));
      clients.push(clientsFor(servers[i].url));
    }
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((sv) => sv.stop()));
    await etcd?.destroy();
  });

  it("a holder renewed through another replica keeps its lock-delay, and its expiry still delays", async () => {
    const [one, two] = clients;
    const resource = uniqueResource("renewed-elsewhere");
    const a = await one.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(DELAY_S) });
    // Renewed only through the other replica, for well over TTL + delay: a delay lease that was not
    // renewed with it would have ended by then.
    const until = Date.now() + (TTL_S + DELAY_S + 2) * 1000;
    let lastSent = 0;
    while (Date.now() < until) {
      lastSent = Date.now();
      await two.lease.renew({ leaseId: a.token!.leaseId });
      await sleep(500);
    }
    const held = await two.lease.describe({ resource });
    expect(held.holder).to.equal("A");
    expect(held.lockDelay).to.deep.include({ seconds: BigInt(DELAY_S) });
    // Now it stops: its expiry starts the delay.
    const obs = observing(two, resource);
    const started = await obs.delayStarted();
    await obs.stop();
    expect(started.at).to.be.at.least(lastSent + TTL_S * 1000 - MARGIN_MS);
    const refusal = await failure(two.lease.acquire({ resource, ttl: secs(5) }));
    expect(refusal.findDetails(ErrorInfoSchema)[0].reason).to.equal("LOCK_DELAY");
    const b = await two.lease.acquire({ resource, ttl: secs(5), wait: true }, { timeoutMs: 30_000 });
    expect(Date.now()).to.be.at.least(earliestGrant(lastSent));
    await two.lease.release({ token: b.token });
  });

  it("a waiter whose lease expires during a lock-delay leaves the line; the next is granted when the delay ends", async () => {
    const [one, two] = clients;
    const resource = uniqueResource("waiter-expires");
    // Long enough that B's place (TTL 2 s, renewed every 2/3 s until its replica dies) ends well within it.
    const delay = 8;
    const obs = observing(one, resource);
    const sentA = Date.now();
    await one.lease.acquire({ resource, ttl: secs(TTL_S), holder: "A", lockDelay: secs(delay) });
    // B waits through replica two, C behind it through replica one.
    const b = two.lease.acquire({ resource, ttl: secs(2), holder: "B", wait: true }, { timeoutMs: 60_000 }).catch((e) => e);
    await eventually(async () => (await one.lease.describe({ resource })).waiters === 1, "B waits");
    const c = one.lease.acquire({ resource, ttl: secs(5), holder: "C", wait: true }, { timeoutMs: 60_000 });
    await eventually(async () => (await one.lease.describe({ resource })).waiters === 2, "C waits");
    await obs.delayStarted();
    // Replica two dies: nobody keeps B's place any more, and its lease expires during the delay, which
    // goes on as it was: C is granted when it ends.
    await servers[1].stop("SIGKILL");
    await eventually(async () => (await one.lease.describe({ resource })).waiters === 1, "B's place expired", 15_000);
    const during = await one.lease.describe({ resource });
    expect(during.held).to.equal(false);
    expect(during.lockDelayUntil).to.not.equal(undefined);
    const granted = await c;
    expect(Date.now()).to.be.at.least(earliestGrant(sentA, delay));
    expect((await one.lease.describe({ resource })).holder).to.equal("C");
    expect(await b).to.be.instanceOf(Error);
    await one.lease.release({ token: granted.token });
    await obs.stop();
    // Replica two again, for whatever runs after.
    servers[1] = await startServer({ etcd: etcd.endpoint, prefix });
    clients[1] = clientsFor(servers[1].url);
  });
});
