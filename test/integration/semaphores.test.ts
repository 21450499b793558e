// Counting semaphores (AcquireRequest.max_holders): the cap checked from etcd's own history, not from
// the clients' view; N mismatches; first come first served; an expiry letting exactly one waiter in;
// Describe and Observe showing N.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import type { AcquireRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { readHistory } from "../faults/etcd-history.js";
import { delta, writeCounts } from "../harness/batching.js";
import { useServer, uniqueResource, sleep, eventually, failure, within } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const SHARED = AcquireMode.SHARED;
const PREFIX = `/fk-sem-${process.pid}/`;

describe("counting semaphores", () => {
  const s = useServer(["--prefix", PREFIX]);

  const acquire = (req: MessageInitShape<typeof AcquireRequestSchema>, timeoutMs = 30_000) => s.lease.acquire(req, { timeoutMs });
  const permit = (resource: string, holder: string, n: number, more: { wait?: boolean; ttlSeconds?: number } = {}, timeoutMs?: number) =>
    acquire({ resource, ttl: ttl(more.ttlSeconds ?? 10), holder, mode: SHARED, maxHolders: n, wait: more.wait ?? false }, timeoutMs);
  const reason = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
  const pending = (p: Promise<unknown>, ms = 500) => within(p.then(() => false, () => false), ms, true);

  it("never has more than 3 holders at any revision with 10 contenders, some releasing, some expiring (from etcd's history)", async function () {
    this.timeout(120_000);
    const resource = uniqueResource("cap");
    const grants: { holder: string; generation: bigint }[] = [];
    // Ten contenders, each twice: half release after a moment, half let their 2 s lease expire.
    const contender = async (i: number) => {
      for (let round = 0; round < 2; round++) {
        const g = await permit(resource, `c${i}-${round}`, 3, { wait: true, ttlSeconds: 2 }, 90_000);
        grants.push({ holder: `c${i}-${round}`, generation: g.token!.generation });
        if ((i + round) % 2 === 0) {
          await sleep(100 + ((i * 37) % 200));
          await s.lease.release({ token: g.token });
        }
        // The others are left to expire: their lease ends, with no call to say so.
      }
    };
    await Promise.all(Array.from({ length: 10 }, (_, i) => contender(i)));
    expect(grants).to.have.length(20);

    // etcd's history: the holder keys of the resource, revision by revision.
    const holderPrefix = `${PREFIX}r/${encodeURIComponent(resource)}/s/`;
    const truth = await readHistory([s.etcd.endpoint], PREFIX, 30_000);
    const holders = new Set<string>();
    let most = 0;
    let puts = 0;
    for (const e of truth.events) {
      const key = e.kv.key.toString();
      if (!key.startsWith(holderPrefix)) continue;
      if (e.type === "put") {
        if (e.kv.version === "1") puts++;
        holders.add(key);
      } else holders.delete(key);
      most = Math.max(most, holders.size);
    }
    expect(puts).to.equal(20);
    expect(most).to.equal(3);
  });

  it("refuses an acquisition naming another N with FAILED_PRECONDITION naming the N in force, and changes nothing", async () => {
    const resource = uniqueResource("mismatch");
    const a = await permit(resource, "a", 3);
    const err = await failure(permit(resource, "b", 5));
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(reason(err).reason).to.equal("MAX_HOLDERS_MISMATCH");
    expect(reason(err).metadata).to.include({ max_holders: "3", requested: "5" });
    expect(err.rawMessage).to.include("max_holders 3");
    // With wait too, and a waiter's place is not left behind.
    const waited = await failure(permit(resource, "c", 2, { wait: true }));
    expect(waited.code).to.equal(Code.FailedPrecondition);
    let d = await s.lease.describe({ resource });
    expect(d.maxHolders).to.equal(3);
    expect(d.waiters).to.equal(0);
    expect(d.holders.map((h) => h.holder)).to.deep.equal(["a"]);
    // Plain shared holders are no semaphore: a semaphore acquisition is refused while they hold.
    const plain = uniqueResource("plain");
    await acquire({ resource: plain, ttl: ttl(10), holder: "reader", mode: SHARED });
    const onPlain = await failure(permit(plain, "sem", 2));
    expect(onPlain.code).to.equal(Code.FailedPrecondition);
    expect(reason(onPlain).metadata).to.include({ max_holders: "0" });
    // And a shared acquisition without max_holders is refused while a semaphore holds: an uncapped holder
    // would break its cap.
    const uncapped = await failure(acquire({ resource, ttl: ttl(10), holder: "reader", mode: SHARED }));
    expect(uncapped.code).to.equal(Code.FailedPrecondition);
    expect(reason(uncapped).metadata).to.include({ max_holders: "3", requested: "0" });
    expect(uncapped.rawMessage).to.include("without max_holders").and.include("max_holders 3");
    const uncappedWaiting = await failure(acquire({ resource, ttl: ttl(10), holder: "reader", mode: SHARED, wait: true }));
    expect(uncappedWaiting.code).to.equal(Code.FailedPrecondition);
    expect((await s.lease.describe({ resource })).holders.map((h) => h.holder)).to.deep.equal(["a"]);
    // Once nobody holds or waits, another N may be set.
    await s.lease.release({ token: a.token });
    await permit(resource, "d", 5);
    d = await s.lease.describe({ resource });
    expect(d.maxHolders).to.equal(5);
  });

  it("refuses max_holders without shared mode, or out of range, with INVALID_ARGUMENT", async () => {
    const resource = uniqueResource("bad");
    for (const req of [
      { resource, ttl: ttl(10), holder: "x", maxHolders: 2 },
      { resource, ttl: ttl(10), holder: "x", mode: SHARED, maxHolders: -1 },
      { resource, ttl: ttl(10), holder: "x", mode: SHARED, maxHolders: 100_001 },
    ]) {
      const err = await failure(acquire(req));
      expect(err.code, JSON.stringify(req.maxHolders)).to.equal(Code.InvalidArgument);
      expect(err.rawMessage).to.include("max_holders");
    }
    expect((await s.lease.describe({ resource })).held).to.equal(false);
  });

  it("grants up to N at once; the next fails fast or waits, and waiters are served in order", async () => {
    const resource = uniqueResource("order");
    const a = await permit(resource, "a", 2);
    const b = await permit(resource, "b", 2);
    expect(b.token!.generation > a.token!.generation).to.equal(true);
    const full = await failure(permit(resource, "c", 2));
    expect(full.code).to.equal(Code.Aborted);
    expect(reason(full).reason).to.equal("RESOURCE_HELD");
    expect(reason(full).metadata).to.include({ max_holders: "2", shared_holders: "2" });

    const order: string[] = [];
    const w1 = permit(resource, "w1", 2, { wait: true }).then((g) => (order.push("w1"), g));
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "w1 waits");
    const w2 = permit(resource, "w2", 2, { wait: true }).then((g) => (order.push("w2"), g));
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 2, "w2 waits");
    // A newcomer without wait is refused while others wait, even with a permit free later.
    await s.lease.release({ token: a.token });
    const g1 = await w1;
    expect(await pending(w2)).to.equal(true);
    expect((await failure(permit(resource, "late", 2))).code).to.equal(Code.Aborted);
    await s.lease.release({ token: b.token });
    const g2 = await w2;
    expect(order).to.deep.equal(["w1", "w2"]);
    const d = await s.lease.describe({ resource });
    expect(d.holders.map((h) => h.token!.generation)).to.deep.equal([g1.token!.generation, g2.token!.generation]);
  });

  it("an expiring holder lets exactly one waiter in", async function () {
    this.timeout(60_000);
    const resource = uniqueResource("expiry");
    // One holder that expires (2 s, never renewed), one that stays (renewed below).
    await permit(resource, "expires", 2, { ttlSeconds: 2 });
    const stays = await permit(resource, "stays", 2, { ttlSeconds: 10 });
    const ctl = new AbortController();
    const wait = (holder: string) =>
      s.lease.acquire({ resource, ttl: ttl(10), holder, mode: SHARED, maxHolders: 2, wait: true }, { timeoutMs: 40_000, signal: ctl.signal });
    const w1 = wait("w1");
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "w1 waits");
    const rest = [wait("w2"), wait("w3")];
    rest.forEach((w) => w.catch(() => undefined));
    try {
      await eventually(async () => (await s.lease.describe({ resource })).waiters === 3, "three wait");
      await s.lease.renew({ leaseId: stays.token!.leaseId });
      const g1 = await w1;
      // Give a second grant time to happen, were the cap to let one through.
      await sleep(1500);
      const d = await s.lease.describe({ resource });
      expect(d.holders.map((h) => h.holder).sort()).to.deep.equal(["stays", "w1"]);
      expect(d.waiters).to.equal(2);
      expect(await pending(Promise.race(rest), 200)).to.equal(true);
      await s.lease.release({ token: g1.token });
      // The freed permit goes to the next in line, w2, and to it alone.
      const g2 = await rest[0];
      expect(g2.token!.generation > g1.token!.generation).to.equal(true);
      await s.lease.release({ token: g2.token });
    } finally {
      ctl.abort();
      await s.lease.release({ token: stays.token }).catch(() => undefined);
    }
  });

  it("a release racing an expiry frees two permits for the first two waiters, never three (from etcd's history)", async function () {
    this.timeout(60_000);
    const resource = uniqueResource("race");
    const started = Date.now();
    await permit(resource, "expires", 2, { ttlSeconds: 2 });
    const releases = await permit(resource, "releases", 2, { ttlSeconds: 10 });
    const ctl = new AbortController();
    const wait = (holder: string) =>
      s.lease.acquire({ resource, ttl: ttl(10), holder, mode: SHARED, maxHolders: 2, wait: true }, { timeoutMs: 40_000, signal: ctl.signal });
    const w: Promise<unknown>[] = [];
    for (const h of ["w1", "w2", "w3"]) {
      w.push(wait(h));
      w.at(-1)!.catch(() => undefined);
      await eventually(async () => (await s.lease.describe({ resource })).waiters === w.length, `${h} waits`);
    }
    try {
      // Release the other holder about when the first one's 2 s lease runs out.
      await sleep(Math.max(0, started + 2000 - Date.now()));
      await s.lease.release({ token: releases.token });
      await eventually(async () => (await s.lease.describe({ resource })).holders.length === 2, "two waiters granted", 15_000);
      await sleep(1000);
      const d = await s.lease.describe({ resource });
      expect(d.holders.map((h) => h.holder).sort()).to.deep.equal(["w1", "w2"]);
      expect(d.waiters).to.equal(1);
      const holderPrefix = `${PREFIX}r/${encodeURIComponent(resource)}/s/`;
      const holders = new Set<string>();
      let most = 0;
      for (const e of (await readHistory([s.etcd.endpoint], PREFIX, 30_000)).events) {
        const key = e.kv.key.toString();
        if (!key.startsWith(holderPrefix)) continue;
        if (e.type === "put") holders.add(key);
        else holders.delete(key);
        most = Math.max(most, holders.size);
      }
      expect(most).to.equal(2);
    } finally {
      ctl.abort();
    }
  });

  it("costs: a first permit is one etcd write request, a later one two; an uncapped shared Acquire beside other shared holders stays one", async () => {
    const resource = uniqueResource("cost");
    let before = await writeCounts(s.server);
    const a = await permit(resource, "a", 3);
    expect(delta(await writeCounts(s.server), before).requests).to.equal(1);
    before = await writeCounts(s.server);
    const b = await permit(resource, "b", 3);
    // The first transaction finds a holder and reads the count; the second grants on that read.
    expect(delta(await writeCounts(s.server), before).requests).to.equal(2);
    const plain = uniqueResource("cost-plain");
    const r1 = await acquire({ resource: plain, ttl: ttl(10), holder: "r1", mode: SHARED });
    before = await writeCounts(s.server);
    const r2 = await acquire({ resource: plain, ttl: ttl(10), holder: "r2", mode: SHARED });
    // The check that no semaphore holds rides in the grant's own transaction.
    expect(delta(await writeCounts(s.server), before).requests).to.equal(1);
    for (const t of [a, b, r1, r2]) await s.lease.release({ token: t.token });
  });

  it("a permit's token is a shared token: the fenced store refuses its writes (SHARED_TOKEN) and the fence does not move", async () => {
    const resource = uniqueResource("writes");
    const p = await permit(resource, "a", 2);
    expect(p.token!.mode).to.equal(SHARED);
    const err = await failure(s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token: p.token } }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(reason(err).reason).to.equal("SHARED_TOKEN");
    expect((await s.lease.describe({ resource })).fence).to.equal(0n);
    await s.lease.release({ token: p.token });
  });

  it("Observe shows N with the holders", async () => {
    const resource = uniqueResource("observe");
    const ctl = new AbortController();
    const stream = s.lease.observe({ resource }, { signal: ctl.signal })[Symbol.asyncIterator]();
    try {
      expect((await stream.next()).value.maxHolders).to.equal(0);
      const a = await permit(resource, "a", 4);
      const next = (await stream.next()).value;
      expect(next.maxHolders).to.equal(4);
      expect(next.joined.map((h: { holder: string }) => h.holder)).to.deep.equal(["a"]);
      await s.lease.release({ token: a.token });
      expect((await stream.next()).value.maxHolders).to.equal(0);
    } finally {
      ctl.abort();
      await stream.return?.(undefined).catch(() => undefined);
    }
  });
});
