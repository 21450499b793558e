// Shared acquisitions (readers) beside exclusive ones (writers): co-holding, who waits for whom, the
// store refusing shared tokens, Describe and Observe, sessions, and the edges: holders expiring one by
// one, a release racing an expiry.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AcquireRequestSchema, ObserveResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencekeeperClient, InvalidArgumentError, ResourceHeldError, fencedUpdate, parseToken, tokenToJson, verifyToken } from "../../client/index.js";
import { delta, writeCounts } from "../harness/batching.js";
import { useServer, uniqueResource, sleep, eventually, failure, within } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const SHARED = AcquireMode.SHARED;

describe("shared leases", () => {
  const s = useServer();

  const acquire = (req: MessageInitShape<typeof AcquireRequestSchema>, timeoutMs = 30_000) => s.lease.acquire(req, { timeoutMs });
  const shared = (resource: string, holder: string, more: { wait?: boolean; sessionId?: bigint } = {}) =>
    acquire({ resource, ttl: more.sessionId ? undefined : ttl(10), holder, mode: SHARED, ...more });
  const reason = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0];

  /** Whether a promise is still pending after a moment: a waiter that must not have been granted yet. */
  async function pending(p: Promise<unknown>, ms = 500): Promise<boolean> {
    return within(p.then(() => false, () => false), ms, true);
  }

  it("two shared holders co-hold, each with a generation of its own, greater than the last", async () => {
    const resource = uniqueResource("co-hold");
    const a = await shared(resource, "reader-a");
    const b = await shared(resource, "reader-b");
    expect(a.token!.mode).to.equal(SHARED);
    expect(b.token!.mode).to.equal(SHARED);
    expect(b.token!.generation > a.token!.generation).to.equal(true);
    expect(a.token!.leaseId).to.not.equal(b.token!.leaseId);
    const d = await s.lease.describe({ resource });
    expect(d.held).to.equal(true);
    expect(d.token).to.equal(undefined);
    expect(d.holder).to.equal("");
    expect(d.lastIssued).to.equal(b.token!.generation);
    expect(d.holders.map((h) => [h.holder, h.token!.generation, h.token!.mode])).to.deep.equal([
      ["reader-a", a.token!.generation, SHARED],
      ["reader-b", b.token!.generation, SHARED],
    ]);
    expect(Number(d.holders[0].ttl!.seconds)).to.be.within(1, 10);
    // Without authentication nobody is known to be a token's principal: Describe shows no signature
    // (docs/verifying-tokens.md), only Acquire's answer carries it.
    expect(a.token!.signature).to.have.length(64);
    expect(d.holders[0].token!.signature).to.have.length(0);
  });

  it("an exclusive Acquire without wait is refused with RESOURCE_HELD naming the shared holders", async () => {
    const resource = uniqueResource("exclusive-refused");
    const a = await shared(resource, "reader-a");
    const b = await shared(resource, "reader-b");
    const err = await failure(acquire({ resource, ttl: ttl(10), holder: "writer" }));
    expect(err.code).to.equal(Code.Aborted);
    const info = reason(err);
    expect(info.reason).to.equal("RESOURCE_HELD");
    expect(info.metadata).to.include({ shared_holders: "2" });
    expect(info.metadata.holders.split(",").sort()).to.deep.equal(["reader-a", "reader-b"]);
    expect(err.rawMessage).to.include("reader-a").and.include("reader-b").and.include(String(a.token!.generation));
    // An exclusive holder refuses a shared one the same way, with its token.
    await s.lease.release({ token: a.token });
    await s.lease.release({ token: b.token });
    const w = await acquire({ resource, ttl: ttl(10), holder: "writer" });
    const refused = await failure(shared(resource, "reader-c"));
    expect(refused.code).to.equal(Code.Aborted);
    expect(reason(refused).metadata).to.include({ holder: "writer", generation: String(w.token!.generation) });
  });

  it("an exclusive waiter waits for every shared holder, and is granted when the last one releases", async () => {
    const resource = uniqueResource("writer-waits");
    const a = await shared(resource, "reader-a");
    const b = await shared(resource, "reader-b");
    const writer = acquire({ resource, ttl: ttl(10), holder: "writer", wait: true });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "the writer waits");
    await s.lease.release({ token: b.token });
    expect(await pending(writer)).to.equal(true);
    await s.lease.release({ token: a.token });
    const w = await writer;
    expect(w.token!.mode).to.equal(AcquireMode.UNSPECIFIED);
    expect(w.token!.generation > b.token!.generation).to.equal(true);
    const d = await s.lease.describe({ resource });
    expect(d.holders.map((h) => h.holder)).to.deep.equal(["writer"]);
    expect(d.holder).to.equal("writer");
  });

  it("a shared acquisition behind a waiting exclusive one waits for it (no writer starvation)", async () => {
    const resource = uniqueResource("no-starvation");
    const a = await shared(resource, "reader-a");
    const writer = acquire({ resource, ttl: ttl(10), holder: "writer", wait: true });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "the writer waits");
    // Without wait, a shared acquisition is refused while an exclusive one waits, though only readers hold.
    const refused = await failure(shared(resource, "reader-late"));
    expect(reason(refused).reason).to.equal("RESOURCE_HELD");
    expect(refused.rawMessage).to.include("exclusive acquisition waits");
    const late = shared(resource, "reader-b", { wait: true });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 2, "the late reader waits too");
    expect(await pending(late)).to.equal(true);

    await s.lease.release({ token: a.token });
    const w = await writer;
    expect(await pending(late)).to.equal(true);
    await s.lease.release({ token: w.token });
    const b = await late;
    expect(b.token!.generation > w.token!.generation).to.equal(true);
    // Readers arriving now join at once: no exclusive acquisition holds or waits.
    const c = await shared(resource, "reader-c");
    expect((await s.lease.describe({ resource })).holders.map((h) => h.token!.generation)).to.deep.equal([b.token!.generation, c.token!.generation]);
  });

  it("shared waiters behind one exclusive holder are all granted when it releases", async () => {
    const resource = uniqueResource("readers-together");
    const w = await acquire({ resource, ttl: ttl(10), holder: "writer" });
    const readers = ["r1", "r2", "r3"].map((name) => shared(resource, name, { wait: true }));
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 3, "three readers wait");
    await s.lease.release({ token: w.token });
    const granted = await Promise.all(readers);
    expect(new Set(granted.map((g) => g.token!.generation)).size).to.equal(3);
    expect((await s.lease.describe({ resource })).holders).to.have.length(3);
  });

  it("shared holders expiring one by one: each leaves on its own, and a waiting writer is granted after the last", async () => {
    const resource = uniqueResource("expire-one-by-one");
    const seen: ObserveResponse[] = [];
    const stop = new AbortController();
    const watching = (async () => {
      for await (const o of s.lease.observe({ resource }, { signal: stop.signal })) seen.push(o);
    })().catch(() => undefined);
    await eventually(() => seen.length === 1, "Observe's first message");
    // The long one first, so that the short one expires after both joined however slow the machine.
    const b = await acquire({ resource, ttl: ttl(8), holder: "long", mode: SHARED });
    const a = await acquire({ resource, ttl: ttl(2), holder: "short", mode: SHARED });
    const writer = acquire({ resource, ttl: ttl(10), holder: "writer", wait: true });
    await eventually(async () => (await s.lease.describe({ resource })).holders.length === 1, "the short holder expired", 15_000);
    expect((await s.lease.describe({ resource })).holders[0].holder).to.equal("long");
    expect(await pending(writer, 200)).to.equal(true);
    const w = await writer;
    expect(w.token!.generation > a.token!.generation).to.equal(true);
    await eventually(() => seen.some((o) => o.holder === "writer"), "Observe reports the writer", 15_000);
    stop.abort();
    await watching;
    // Observe: free, long joins, short joins, short leaves (long stays), then the writer (long left with that handover).
    const steps = seen.map((o) => ({
      holders: o.holders.map((h) => h.holder),
      joined: o.joined.map((h) => h.holder),
      left: o.left.map((h) => h.holder),
    }));
    expect(steps).to.deep.equal([
      { holders: [], joined: [], left: [] },
      { holders: ["long"], joined: ["long"], left: [] },
      { holders: ["long", "short"], joined: ["short"], left: [] },
      { holders: ["long"], joined: [], left: ["short"] },
      { holders: ["writer"], joined: [], left: ["long"] },
    ]);
    expect(seen[2].joined[0].token!.generation).to.equal(a.token!.generation);
    expect(seen.map((o) => o.held)).to.deep.equal([false, true, true, true, true]);
  });

  it("a release racing the expiry of a shared holder ends that holding only, once", async () => {
    const resource = uniqueResource("release-races-expiry");
    const other = await shared(resource, "stays");
    const a = await acquire({ resource, ttl: ttl(2), holder: "racing", mode: SHARED });
    // Release about when etcd expires the lease: either the release or the expiry ends it.
    await sleep(1900);
    const first = await s.lease.release({ token: a.token }).then(
      () => "released",
      (e) => (reason(e)?.reason === "LEASE_NOT_FOUND" ? "expired" : Promise.reject(e)),
    );
    expect(["released", "expired"]).to.include(first);
    const again = await failure(s.lease.release({ token: a.token }));
    expect(again.code).to.equal(Code.NotFound);
    await eventually(async () => (await s.lease.describe({ resource })).holders.length === 1, "only the other holder is left", 10_000);
    const d = await s.lease.describe({ resource });
    expect(d.holders[0].token!.generation).to.equal(other.token!.generation);
    expect((await s.lease.renew({ leaseId: other.token!.leaseId })).ttl).to.not.equal(undefined);
  });

  it("the fenced store refuses a shared token, and the write changes nothing", async () => {
    const resource = uniqueResource("store-refuses");
    const a = await shared(resource, "reader");
    for (const write of [
      () => s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token: a.token } }),
      () => s.store.delete({ resource, key: "k", mutation: { token: a.token } }),
      () => s.store.txn({ resource, ops: [{ op: { case: "put", value: { key: "k", value: Buffer.from("v") } } }], mutation: { token: a.token } }),
    ]) {
      const err = await failure(write());
      expect(err.code).to.equal(Code.InvalidArgument);
      expect(reason(err).reason).to.equal("SHARED_TOKEN");
      expect(err.rawMessage).to.include("exclusive");
    }
    expect((await s.store.get({ resource, key: "k" })).found).to.equal(false);
    expect((await s.lease.describe({ resource })).fence).to.equal(0n);
    // The mode is signed: a shared token passed off as an exclusive one does not verify.
    const forged: FencingToken = { ...a.token!, mode: AcquireMode.UNSPECIFIED };
    const err = await failure(s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token: forged } }));
    expect(reason(err).reason).to.equal("TOKEN_SIGNATURE_INVALID");
    expect((await s.store.get({ resource, key: "k" })).found).to.equal(false);
    // Reading is anyone's, and an exclusive holder writes as ever once the reader is gone.
    await s.lease.release({ token: a.token });
    const w = await acquire({ resource, ttl: ttl(10), holder: "writer" });
    await s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token: w.token } });
    expect((await s.store.get({ resource, key: "k" })).found).to.equal(true);
  });

  it("refuses a mode that is not an AcquireMode, in a request or in a token", async () => {
    const resource = uniqueResource("bad-mode");
    const err = await failure(acquire({ resource, ttl: ttl(10), holder: "x", mode: 7 as AcquireMode }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.include("mode 7 is not an AcquireMode");
    const w = await acquire({ resource, ttl: ttl(10), holder: "writer" });
    const bad = await failure(s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token: { ...w.token!, mode: 9 as AcquireMode } } }));
    expect(bad.code).to.equal(Code.InvalidArgument);
    expect(bad.rawMessage).to.include("mutation.token.mode 9");
  });

  it("Renew keeps a shared holding, and Release gives up exactly its generation", async () => {
    const resource = uniqueResource("renew-release");
    const a = await acquire({ resource, ttl: ttl(4), holder: "reader", mode: SHARED });
    for (let i = 0; i < 3; i++) {
      await sleep(1000);
      await s.lease.renew({ leaseId: a.token!.leaseId });
    }
    expect((await s.lease.describe({ resource })).holders.map((h) => h.holder)).to.deep.equal(["reader"]);
    await s.lease.release({ token: a.token });
    expect((await s.lease.describe({ resource })).held).to.equal(false);
    expect((await failure(s.lease.renew({ leaseId: a.token!.leaseId }))).code).to.equal(Code.NotFound);
  });

  it("costs the exclusive path nothing more: one etcd write request for an uncontended Acquire, one for each handover", async () => {
    const resource = uniqueResource("exclusive-cost");
    let before = await writeCounts(s.server);
    const a = await acquire({ resource, ttl: ttl(10), holder: "A" });
    expect(delta(await writeCounts(s.server), before).requests).to.equal(1);
    const waiter = acquire({ resource, ttl: ttl(10), holder: "B", wait: true });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "B waits");
    before = await writeCounts(s.server);
    await s.lease.release({ token: a.token });
    await waiter;
    // The release, and the waiter's grant.
    expect(delta(await writeCounts(s.server), before).requests).to.equal(2);
    // A shared Acquire costs the same when nothing is in its way.
    const other = uniqueResource("shared-cost");
    before = await writeCounts(s.server);
    await shared(other, "reader");
    expect(delta(await writeCounts(s.server), before).requests).to.equal(1);
  });

  describe("on sessions", () => {
    const open = async (holder: string) => (await s.lease.openSession({ ttl: ttl(10), holder })).sessionId;

    it("two sessions co-hold; a session holds a resource once, in either mode", async () => {
      const resource = uniqueResource("session-shared");
      const [s1, s2] = [await open("one"), await open("two")];
      const a = await shared(resource, "one", { sessionId: s1 });
      const b = await shared(resource, "two", { sessionId: s2 });
      expect(a.token!.leaseId).to.equal(s1);
      expect(b.token!.generation > a.token!.generation).to.equal(true);
      for (const mode of [SHARED, AcquireMode.EXCLUSIVE]) {
        const err = await failure(acquire({ resource, holder: "one", sessionId: s1, mode, wait: true }));
        expect(err.code).to.equal(Code.AlreadyExists);
        expect(reason(err).metadata).to.include({ generation: String(a.token!.generation) });
      }
      // Release gives up that generation; the session lives on, and may acquire again.
      await s.lease.release({ token: a.token });
      const again = await shared(resource, "one", { sessionId: s1 });
      expect(again.token!.generation > b.token!.generation).to.equal(true);
      expect((await failure(s.lease.release({ token: a.token }))).code).to.equal(Code.NotFound);
      expect((await s.lease.describe({ resource })).holders).to.have.length(2);
    });

    it("a session waiting shared behind an exclusive holder cannot also acquire it, and closing sessions hands over", async () => {
      const resource = uniqueResource("session-wait");
      const [writerSession, readerSession] = [await open("writer"), await open("reader")];
      await acquire({ resource, holder: "writer", sessionId: writerSession });
      const reader = shared(resource, "reader", { sessionId: readerSession, wait: true });
      await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "the reader waits");
      const err = await failure(shared(resource, "reader", { sessionId: readerSession }));
      expect(err.code).to.equal(Code.AlreadyExists);
      expect(err.rawMessage).to.include("waits for");
      await s.lease.closeSession({ sessionId: writerSession });
      const r = await reader;
      expect(r.token!.mode).to.equal(SHARED);
      // An exclusive waiter on another session waits for the reader's session to close.
      const third = await open("third");
      const writer = acquire({ resource, holder: "third", sessionId: third, wait: true });
      await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "the writer waits");
      expect(await pending(writer)).to.equal(true);
      await s.lease.closeSession({ sessionId: readerSession });
      const w = await writer;
      expect(w.token!.generation > r.token!.generation).to.equal(true);
    });
  });

  describe("through the TypeScript SDK", () => {
    let fk: FencekeeperClient;
    beforeEach(() => (fk = new FencekeeperClient({ servers: s.server.url, holder: "sdk" })));
    afterEach(() => fk.close());

    it("acquires shared, verifies shared tokens offline, refuses their writes, and describes the holders", async () => {
      const resource = uniqueResource("sdk-shared");
      const a = await fk.acquire(resource, { shared: true, holder: "a" });
      const b = await fk.acquire(resource, { shared: true, holder: "b" });
      expect(a.token.shared).to.equal(true);
      const keys = await fk.tokenKeys();
      expect(verifyToken(b.token, keys)).to.deep.equal({ ok: true });
      expect(verifyToken({ ...b.token, shared: undefined }, keys)).to.deep.equal({ ok: false, reason: "bad signature" });
      const err = await a.put("k", "v").catch((e) => e);
      expect(err).to.be.instanceOf(InvalidArgumentError);
      expect(err.reason).to.equal("SHARED_TOKEN");
      // The PostgreSQL helpers refuse it too, before any SQL.
      const queries: string[] = [];
      const db = { query: async (sql: string) => (queries.push(sql), { rowCount: 0, rows: [] }) };
      const pg = await fencedUpdate(db, { table: "t", id: 1, token: a.token, unverified: true, set: { v: 1 } }).catch((e) => e);
      expect(pg).to.be.instanceOf(RangeError);
      expect(queries).to.deep.equal([]);
      const d = await fk.describe(resource);
      expect(d.held).to.equal(true);
      expect(d.token).to.equal(undefined);
      expect(d.holders.map((h) => [h.holder, h.token.shared])).to.deep.equal([
        ["a", true],
        ["b", true],
      ]);
      expect(await fk.acquire(resource, { holder: "writer" }).catch((e) => e)).to.be.instanceOf(ResourceHeldError);
      // The JSON form keeps the mode, so that the token still verifies and releases.
      const parsed = parseToken(JSON.stringify(tokenToJson(a.token)));
      expect(parsed.shared).to.equal(true);
      await s.lease.release({ token: { ...parsed, principal: parsed.principal ?? "", keyId: parsed.keyId ?? "", signature: parsed.signature, mode: SHARED } });
      await b.release();
      const w = await fk.acquire(resource, { holder: "writer", wait: 10_000 });
      expect(w.token.shared).to.equal(undefined);
      await w.put("k", "v");
      await w.release();
      await a.release().catch(() => undefined);
    });

    it("acquires shared on the client's session", async () => {
      const resource = uniqueResource("sdk-session");
      const onSessions = new FencekeeperClient({ servers: s.server.url, holder: "sessions", sessions: true });
      try {
        const [a, b] = await Promise.all([onSessions.acquire(resource, { shared: true }), fk.acquire(resource, { shared: true })]);
        expect((await fk.describe(resource)).holders).to.have.length(2);
        // The session holds it already: a second acquisition goes on a lease of its own, as without sessions.
        const again = await onSessions.acquire(resource, { shared: true });
        expect(again.token.leaseId).to.not.equal(a.token.leaseId);
        expect((await fk.describe(resource)).holders).to.have.length(3);
        await Promise.all([a.release(), b.release(), again.release()]);
        expect((await fk.describe(resource)).held).to.equal(false);
      } finally {
        await onSessions.close();
      }
    });
  });
});
