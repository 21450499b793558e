// Election on the server: the value an acquisition publishes (AcquireRequest.value), Proclaim changing
// it under the holder's token only, and Observe telling followers every change of leader and of value,
// in order, the current state first.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode, FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import type { ObserveResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { useServer, uniqueResource, eventually, failure } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b ?? new Uint8Array(0));

describe("election: published values, Proclaim, Observe", () => {
  const s = useServer();
  const reason = (err: ConnectError) => err.findDetails(ErrorInfoSchema)[0];

  /** Every message of an Observe of resource, until stop() is called. */
  function follow(resource: string) {
    const seen: ObserveResponse[] = [];
    const stop = new AbortController();
    const done = (async () => {
      for await (const o of s.lease.observe({ resource }, { signal: stop.signal })) seen.push(o);
    })().catch(() => undefined);
    return {
      seen,
      stop: async () => {
        stop.abort();
        await done;
      },
    };
  }
  /** What a follower learns from a message: who leads (generation) and what it says. */
  const view = (o: ObserveResponse) => (o.held ? `${o.holder}#${o.token!.generation}=${text(o.value)}` : "free");

  it("Acquire's value shows in Describe (and its holder) and in Observe's first message", async () => {
    const resource = uniqueResource("value");
    const a = await s.lease.acquire({ resource, ttl: ttl(10), holder: "leader-a", value: bytes("10.0.0.1:8080") });
    const d = await s.lease.describe({ resource });
    expect(text(d.value)).to.equal("10.0.0.1:8080");
    // A value is sent once per answer: the exclusive holder's at the top, not again in holders.
    expect(d.holders[0].value).to.have.length(0);
    expect(d.holder).to.equal("leader-a");
    const f = follow(resource);
    await eventually(() => f.seen.length === 1, "Observe's first message");
    expect(view(f.seen[0])).to.equal(`leader-a#${a.token!.generation}=10.0.0.1:8080`);
    await f.stop();
    // Without a value, none is shown.
    await s.lease.release({ token: a.token });
    await s.lease.acquire({ resource, ttl: ttl(10), holder: "leader-b" });
    expect((await s.lease.describe({ resource })).value.length).to.equal(0);
  });

  it("Proclaim changes the value under the same generation, and followers see each change in order", async () => {
    const resource = uniqueResource("proclaim");
    const f = follow(resource);
    await eventually(() => f.seen.length === 1, "Observe's first message");
    const a = await s.lease.acquire({ resource, ttl: ttl(10), holder: "a", value: bytes("a1") });
    const p1 = await s.lease.proclaim({ token: a.token, value: bytes("a2") });
    const p2 = await s.lease.proclaim({ token: a.token, value: bytes("a3") });
    expect(p2.revision > p1.revision).to.equal(true);
    const b = s.lease.acquire({ resource, ttl: ttl(10), holder: "b", wait: true, value: bytes("b1") }, { timeoutMs: 30_000 });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "b waits");
    await s.lease.release({ token: a.token });
    const bt = (await b).token!;
    await s.lease.proclaim({ token: bt, value: bytes("b2") });
    const g = a.token!.generation;
    const want = ["free", `a#${g}=a1`, `a#${g}=a2`, `a#${g}=a3`, `b#${bt.generation}=b1`, `b#${bt.generation}=b2`];
    await eventually(() => f.seen.length >= want.length, `every change observed, got ${f.seen.map(view)}`);
    expect(f.seen.map(view)).to.deep.equal(want);
    const revisions = f.seen.map((o) => o.revision);
    for (let i = 1; i < revisions.length; i++) expect(revisions[i] > revisions[i - 1]).to.equal(true);
    // The Proclaim's answer names the revision at which Observe reports it.
    expect(f.seen[2].revision).to.equal(p1.revision);
    await f.stop();

    // A follower that (re)connects gets the current leader and value first.
    const again = follow(resource);
    await eventually(() => again.seen.length === 1, "the reconnected Observe's first message");
    expect(view(again.seen[0])).to.equal(`b#${bt.generation}=b2`);
    await again.stop();
    // The generation did not change, and the token still holds: it writes.
    const d = await s.lease.describe({ resource });
    expect(d.token!.generation).to.equal(bt.generation);
    await s.store.put({ resource, key: "k", value: bytes("v"), mutation: { token: bt, mode: FenceMode.LIVE } });
  });

  it("a stale token's Proclaim is refused like a stale write (STALE_TOKEN), and changes nothing", async () => {
    const resource = uniqueResource("stale");
    const a = await s.lease.acquire({ resource, ttl: ttl(10), holder: "a", value: bytes("a1") });
    await s.lease.release({ token: a.token });
    // Released, and nobody newer: the lease is no longer held.
    let err = await failure(s.lease.proclaim({ token: a.token, value: bytes("late") }));
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(reason(err).reason).to.equal("LEASE_NOT_HELD");
    const b = await s.lease.acquire({ resource, ttl: ttl(10), holder: "b", value: bytes("b1") });
    // A newer generation leads now (it has not written yet): the old one is stale.
    err = await failure(s.lease.proclaim({ token: a.token, value: bytes("late") }));
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(reason(err).reason).to.equal("STALE_TOKEN");
    expect(reason(err).metadata).to.include({ resource, generation: String(a.token!.generation), last_issued: String(b.token!.generation) });
    expect(err.rawMessage).to.include("must stop");
    const d = await s.lease.describe({ resource });
    expect(text(d.value)).to.equal("b1");
    expect(d.token!.generation).to.equal(b.token!.generation);
    // A generation never issued (unsigned: the server runs without signatures required).
    const forged: FencingToken = { ...b.token!, generation: b.token!.generation + 100n, signature: new Uint8Array(0), keyId: "" } as FencingToken;
    err = await failure(s.lease.proclaim({ token: forged, value: bytes("x") }));
    expect(reason(err).reason).to.equal("GENERATION_NOT_ISSUED");
    // A foreign token of a live generation, altered: its signature no longer verifies.
    err = await failure(s.lease.proclaim({ token: { ...b.token!, leaseId: b.token!.leaseId + 1n } as FencingToken, value: bytes("x") }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(text((await s.lease.describe({ resource })).value)).to.equal("b1");
  });

  it("Proclaims racing each other all land, one at a time: the last to commit is the value, and each is observed", async () => {
    const resource = uniqueResource("racing");
    const a = await s.lease.acquire({ resource, ttl: ttl(10), holder: "a", value: bytes("v0") });
    const f = follow(resource);
    await eventually(() => f.seen.length === 1, "Observe's first message");
    const n = 8;
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => s.lease.proclaim({ token: a.token, value: bytes(`v${i + 1}`) })));
    const byRevision = answers.map((r, i) => ({ revision: r.revision, value: `v${i + 1}` })).sort((x, y) => (x.revision < y.revision ? -1 : 1));
    expect(new Set(answers.map((r) => r.revision)).size, "one revision each").to.equal(n);
    const d = await s.lease.describe({ resource });
    expect(text(d.value)).to.equal(byRevision.at(-1)!.value);
    expect(d.holder).to.equal("a");
    await eventually(() => f.seen.length === n + 1, "each Proclaim observed");
    expect(f.seen.slice(1).map((o) => text(o.value))).to.deep.equal(byRevision.map((x) => x.value));
    expect(f.seen.slice(1).map((o) => o.revision)).to.deep.equal(byRevision.map((x) => x.revision));
    await f.stop();
  });

  it("a value over 1 MiB is INVALID_ARGUMENT and changes nothing; a missing token too", async () => {
    const resource = uniqueResource("too-large");
    const big = new Uint8Array(1024 * 1024 + 1);
    let err = await failure(s.lease.acquire({ resource, ttl: ttl(10), holder: "a", value: big }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.include("value is 1048577 bytes");
    expect((await s.lease.describe({ resource })).held).to.equal(false);
    // 1 MiB exactly is allowed, and comes back whole.
    const max = new Uint8Array(1024 * 1024).fill(7);
    const a = await s.lease.acquire({ resource, ttl: ttl(10), holder: "a", value: max });
    expect((await s.lease.describe({ resource })).value).to.deep.equal(max);
    err = await failure(s.lease.proclaim({ token: a.token, value: big }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect((await s.lease.describe({ resource })).value).to.deep.equal(max);
    err = await failure(s.lease.proclaim({ value: bytes("x") }));
    expect(err.code).to.equal(Code.InvalidArgument);
  });

  it("a proclaimed value stays on the holder's lease: it goes when the lease expires", async () => {
    const resource = uniqueResource("expires");
    const a = await s.lease.acquire({ resource, ttl: ttl(2), holder: "a", value: bytes("a1") });
    await s.lease.proclaim({ token: a.token, value: bytes("a2") });
    await eventually(async () => !(await s.lease.describe({ resource })).held, "the lease expired, value and all", 15_000);
    const err = await failure(s.lease.proclaim({ token: a.token, value: bytes("a3") }));
    expect(reason(err).reason).to.equal("LEASE_NOT_HELD");
  });

  it("on a session, and for shared holders: values shown per holder, a shared Proclaim observed", async () => {
    const resource = uniqueResource("session-shared");
    const session = await s.lease.openSession({ ttl: ttl(10), holder: "sess" });
    const a = await s.lease.acquire({ resource, sessionId: session.sessionId, holder: "a", value: bytes("on-session"), mode: AcquireMode.SHARED });
    const b = await s.lease.acquire({ resource, ttl: ttl(10), holder: "b", value: bytes("b1"), mode: AcquireMode.SHARED });
    const f = follow(resource);
    await eventually(() => f.seen.length === 1, "Observe's first message");
    await s.lease.proclaim({ token: a.token, value: bytes("a2") });
    await eventually(() => f.seen.length === 2, "the shared Proclaim observed");
    expect(f.seen[1].holders.map((h) => `${h.holder}=${text(h.value)}`)).to.deep.equal(["a=a2", "b=b1"]);
    expect(f.seen[1].joined).to.have.length(0);
    expect(f.seen[1].left).to.have.length(0);
    expect(f.seen[1].value.length).to.equal(0);
    await f.stop();
    // The key stays on the session: closing it ends the acquisition.
    await s.lease.closeSession({ sessionId: session.sessionId });
    await eventually(async () => (await s.lease.describe({ resource })).holders.length === 1, "the session's holder left");
    await s.lease.release({ token: b.token });
  });
});
