// LeaseBatch and AcquireAll through a real server: a LeaseBatch answers each acquisition and release as
// the call alone would, and refuses only what can never be taken as a whole; AcquireAll is all or
// nothing, in the order of the names' bytes, and gives back what it took when one resource fails.
import { expect } from "chai";
import { createRegistry } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ErrorInfoSchema, file_google_rpc_error_details } from "../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService, type LeaseBatchResult } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { FenceMode, file_fencekeeper_v1_token, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import type { Status } from "../../gen/ts/google/rpc/status_pb.js";
import { clientsFor } from "../harness/clients.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, uniqueResource, useServer } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const reasonOf = (e: ConnectError) => e.findDetails(ErrorInfoSchema)[0]?.reason;

function errorOf(r: LeaseBatchResult) {
  if (r.result.case !== "error") throw new Error(`expected an error, got ${r.result.case}`);
  return r.result.value;
}
function tokenOf(r: LeaseBatchResult): FencingToken {
  if (r.result.case !== "acquired") throw new Error(`expected a grant, got ${r.result.case}: ${r.result.case === "error" ? r.result.value.message : ""}`);
  return r.result.value.token!;
}

describe("LeaseBatch: many acquisitions and releases in one call, each answered on its own", () => {
  const s = useServer(["--max-waiters-per-caller", "2"]);

  it("answers each op as the call alone: grants, RESOURCE_HELD, releases, NOT_FOUND, and a refused preempt", async () => {
    const [free1, free2, held, gone] = ["free1", "free2", "held", "gone"].map(uniqueResource);
    const holder = await s.lease.acquire({ resource: held, ttl: ttl(10), holder: "H" });
    const toRelease = await s.lease.acquire({ resource: gone, ttl: ttl(10), holder: "R" });
    await s.lease.release({ token: toRelease.token });
    const mine = await s.lease.acquire({ resource: free2, ttl: ttl(10), holder: "M" });
    const res = await s.lease.leaseBatch({
      ops: [
        { op: { case: "acquire", value: { resource: free1, ttl: ttl(10), holder: "B" } } },
        { op: { case: "acquire", value: { resource: held, ttl: ttl(10), holder: "B" } } },
        { op: { case: "release", value: { token: mine.token } } },
        { op: { case: "release", value: { token: toRelease.token } } },
        { op: { case: "acquire", value: { resource: held, ttl: ttl(10), holder: "B", preempt: true } } },
        { op: { case: undefined } },
        { op: { case: "acquire", value: { resource: "", ttl: ttl(10) } } },
      ],
    });
    expect(res.results).to.have.length(7);
    const granted = tokenOf(res.results[0]);
    expect(granted.resource).to.equal(free1);
    expect((await s.lease.describe({ resource: free1 })).token?.generation).to.equal(granted.generation);

    const refused = errorOf(res.results[1]);
    expect(refused.code).to.equal(Code.Aborted);
    expect(refused.message).to.include(held);
    expect((await s.lease.describe({ resource: held })).token?.generation, "the holder is untouched").to.equal(holder.token!.generation);

    expect(res.results[2].result.case).to.equal("released");
    expect((await s.lease.describe({ resource: free2 })).held).to.equal(false);

    expect(errorOf(res.results[3]).code).to.equal(Code.NotFound);
    const preempt = errorOf(res.results[4]);
    expect(preempt.code).to.equal(Code.InvalidArgument);
    expect(preempt.message).to.include("preempt with Acquire alone");
    expect(errorOf(res.results[5]).code).to.equal(Code.InvalidArgument);
    expect(errorOf(res.results[6]).code).to.equal(Code.InvalidArgument);
    // The granted op holds a lease like any Acquire's: Renew and Release work on it.
    await s.lease.renew({ leaseId: granted.leaseId });
    await s.lease.release({ token: granted });
  });

  it("refuses a batch that can never be taken, acquiring nothing: none, over 1000 ops, over 2 MiB of values", async () => {
    const none = await failure(s.lease.leaseBatch({ ops: [] }));
    expect(none.code).to.equal(Code.InvalidArgument);
    const base = uniqueResource("too-many");
    const many = await failure(
      s.lease.leaseBatch({ ops: Array.from({ length: 1001 }, (_, i) => ({ op: { case: "acquire" as const, value: { resource: `${base}-${i}`, ttl: ttl(10) } } })) }),
    );
    expect(many.code).to.equal(Code.InvalidArgument);
    expect(reasonOf(many)).to.equal("BATCH_TOO_LARGE");
    expect(many.message).to.include("1001 ops");
    expect((await s.lease.describe({ resource: `${base}-0` })).lastIssued, "nothing was acquired").to.equal(0n);
    const big = uniqueResource("big");
    const value = new Uint8Array(1024 * 1024);
    const heavy = await failure(
      s.lease.leaseBatch({ ops: [0, 1, 2].map((i) => ({ op: { case: "acquire" as const, value: { resource: `${big}-${i}`, ttl: ttl(10), value } } })) }),
    );
    expect(reasonOf(heavy)).to.equal("BATCH_TOO_LARGE");
    expect((await s.lease.describe({ resource: `${big}-0` })).lastIssued).to.equal(0n);
  });

  it("takes a waiting slot per waiting acquisition: over the caller's cap, that op alone is RESOURCE_EXHAUSTED", async () => {
    const [a, b, c] = ["cap-a", "cap-b", "cap-c"].map(uniqueResource);
    const holders = await Promise.all([a, b, c].map((resource) => s.lease.acquire({ resource, ttl: ttl(10), holder: "H" })));
    const ac = new AbortController();
    const batch = s.lease.leaseBatch(
      { ops: [a, b, c].map((resource) => ({ op: { case: "acquire" as const, value: { resource, ttl: ttl(10), wait: true } } })) },
      { signal: ac.signal },
    );
    // Two wait (the cap is 2); the third op is refused on its own, and the call goes on waiting.
    await eventually(async () => (await Promise.all([a, b, c].map((resource) => s.lease.describe({ resource })))).reduce((n, d) => n + d.waiters, 0) === 2, "two ops wait");
    await Promise.all(holders.map((h) => s.lease.release({ token: h.token })));
    const res = await batch;
    const codes = res.results.map((r) => (r.result.case === "error" ? r.result.value.code : "acquired"));
    expect(codes.filter((c) => c === "acquired")).to.have.length(2);
    expect(codes.filter((c) => c === Code.ResourceExhausted)).to.have.length(1);
  });
});

describe("AcquireAll: several resources, all or nothing, in a fixed order", () => {
  const s = useServer();

  it("grants every resource, each with a token of its own, answered in the request's order", async () => {
    const names = ["c", "a", "b"].map((n) => uniqueResource(`all-${n}`));
    const res = await s.lease.acquireAll({ resources: names, ttl: ttl(10), holder: "M" });
    expect(res.acquisitions.map((a) => a.token!.resource)).to.deep.equal(names);
    expect(new Set(res.acquisitions.map((a) => a.token!.leaseId)).size, "a lease each").to.equal(3);
    for (const a of res.acquisitions) expect((await s.lease.describe({ resource: a.token!.resource })).token?.generation).to.equal(a.token!.generation);
    // Acquired in the order of the names' bytes: a before b before c.
    const byName = [...res.acquisitions].sort((x, y) => (x.token!.resource < y.token!.resource ? -1 : 1));
    expect(byName.map((a) => a.token!.generation)).to.deep.equal([...byName.map((a) => a.token!.generation)].sort((x, y) => (x < y ? -1 : 1)));
    for (const a of res.acquisitions) await s.lease.release({ token: a.token });
  });

  it("without wait, fails on the first held resource and releases those taken before it; those after it are never touched", async () => {
    const base = uniqueResource("nowait");
    const [a, b, c] = [`${base}-a`, `${base}-b`, `${base}-c`];
    const holder = await s.lease.acquire({ resource: b, ttl: ttl(10), holder: "H" });
    const err = await failure(s.lease.acquireAll({ resources: [c, b, a], ttl: ttl(10), holder: "M" }));
    expect(err.code).to.equal(Code.Aborted);
    expect(reasonOf(err)).to.equal("RESOURCE_HELD");
    const [da, db, dc] = await Promise.all([a, b, c].map((resource) => s.lease.describe({ resource })));
    expect(da.lastIssued > 0n, "a was acquired first").to.equal(true);
    expect(da.held, "and given back").to.equal(false);
    expect(db.token?.generation).to.equal(holder.token!.generation);
    expect(dc.lastIssued, "c was never tried").to.equal(0n);
  });

  it("with wait, two callers asking for the same resources in opposite orders both finish, round after round", async () => {
    const base = uniqueResource("cross");
    const [x, y, z] = [`${base}-x`, `${base}-y`, `${base}-z`];
    const rounds = async (resources: string[], holder: string) => {
      for (let i = 0; i < 15; i++) {
        const res = await s.lease.acquireAll({ resources, ttl: ttl(10), holder, wait: true }, { timeoutMs: 20_000 });
        await Promise.all(res.acquisitions.map((a) => s.lease.release({ token: a.token })));
      }
    };
    await Promise.all([rounds([x, y, z], "P"), rounds([z, y, x], "Q"), rounds([y, z], "R")]);
    for (const r of [x, y, z]) expect((await s.lease.describe({ resource: r })).held).to.equal(false);
  });

  it("with wait, a set not whole by wait_timeout answers DEADLINE_EXCEEDED and holds nothing, waits for nothing", async () => {
    const base = uniqueResource("timeout");
    const [a, b] = [`${base}-a`, `${base}-b`];
    await s.lease.acquire({ resource: b, ttl: ttl(10), holder: "H" });
    const err = await failure(s.lease.acquireAll({ resources: [a, b], ttl: ttl(10), wait: true, waitTimeout: { seconds: 1n, nanos: 0 } }));
    expect(err.code).to.equal(Code.DeadlineExceeded);
    const [da, db] = await Promise.all([a, b].map((resource) => s.lease.describe({ resource })));
    expect([da.held, da.waiters, db.waiters]).to.deep.equal([false, 0, 0]);
  });

  it("a caller that cancels while waiting for the last resource gets none: the first is given back", async () => {
    const base = uniqueResource("cancel");
    const [a, b] = [`${base}-a`, `${base}-b`];
    await s.lease.acquire({ resource: b, ttl: ttl(10), holder: "H" });
    const ac = new AbortController();
    const call = s.lease.acquireAll({ resources: [a, b], ttl: ttl(10), wait: true }, { signal: ac.signal });
    await eventually(async () => (await s.lease.describe({ resource: b })).waiters === 1, "the call waits for b, holding a");
    expect((await s.lease.describe({ resource: a })).held).to.equal(true);
    ac.abort();
    expect((await failure(call)).code).to.equal(Code.Canceled);
    await eventually(async () => !(await s.lease.describe({ resource: a })).held, "a is released");
    expect((await s.lease.describe({ resource: b })).waiters).to.equal(0);
  });

  it("on a session: every acquisition is the session's, and closing the session ends them all", async () => {
    const { sessionId } = await s.lease.openSession({ ttl: ttl(10), holder: "S" });
    const names = ["s1", "s2"].map(uniqueResource);
    const res = await s.lease.acquireAll({ resources: names, sessionId });
    expect(res.acquisitions.map((a) => a.token!.leaseId)).to.deep.equal([sessionId, sessionId]);
    await s.lease.closeSession({ sessionId });
    for (const r of names) expect((await s.lease.describe({ resource: r })).held).to.equal(false);
  });

  it("refuses a set that can never be taken, acquiring nothing: none, a name twice, an invalid name, over 100", async () => {
    const r = uniqueResource("bad");
    const cases = [
      { resources: [] as string[], code: Code.InvalidArgument },
      { resources: [r, r], code: Code.InvalidArgument },
      { resources: [r, ""], code: Code.InvalidArgument },
      { resources: Array.from({ length: 101 }, (_, i) => `${r}-${i}`), code: Code.InvalidArgument, reason: "BATCH_TOO_LARGE" },
    ];
    for (const c of cases) {
      const err = await failure(s.lease.acquireAll({ resources: c.resources, ttl: ttl(10) }));
      expect(err.code, c.resources.join(",").slice(0, 40)).to.equal(c.code);
      if (c.reason) expect(reasonOf(err)).to.equal(c.reason);
    }
    expect((await s.lease.describe({ resource: r })).lastIssued).to.equal(0n);
    expect((await s.lease.describe({ resource: `${r}-0` })).lastIssued).to.equal(0n);
  });
});

describe("LeaseBatch without the fast path (connect-node serves it the same)", () => {
  let server: TestServer;
  const s = useServer();
  before(async function () {
    this.timeout(60_000);
    server = await startServer({ etcd: s.etcd.endpoint, args: ["--unary-fast-path", "off"] });
  });
  after(async () => server?.stop());

  it("answers per op", async () => {
    const c = clientsFor(server.url);
    const r = uniqueResource("slow-path");
    const res = await c.lease.leaseBatch({ ops: [{ op: { case: "acquire", value: { resource: r, ttl: ttl(10) } } }, { op: { case: "acquire", value: { resource: r, ttl: ttl(10) } } }] });
    expect(res.results.map((x) => x.result.case).sort()).to.deep.equal(["acquired", "error"]);
  });
});

// A per-operation error is a google.rpc.Status whose details are google.protobuf.Any: in JSON, an Any is
// written with its type's fields, so the server must know the types it packs (server/wire/json-registry.ts).
// Without them, a JSON caller's LeaseBatch with a refused release lost its connection (the fuzzer found it).
describe("per-operation errors over JSON (Connect, gRPC-Web, gRPC), with the fast path and without", () => {
  const s = useServer();
  let slow: TestServer;
  before(async function () {
    this.timeout(60_000);
    slow = await startServer({ etcd: s.etcd.endpoint, args: ["--unary-fast-path", "off"] });
  });
  after(async () => slow?.stop());

  const registry = createRegistry(file_google_rpc_error_details, file_fencekeeper_v1_token);
  const transports: [string, (url: string) => Transport][] = [
    ["Connect JSON", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, jsonOptions: { registry } })],
    ["gRPC-Web JSON", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, jsonOptions: { registry } })],
    ["gRPC JSON", (baseUrl) => createGrpcTransport({ baseUrl, useBinaryFormat: false, jsonOptions: { registry } })],
  ];
  const reasonIn = (status: Status | undefined) => (status?.details[0] ? anyUnpack(status.details[0], ErrorInfoSchema)?.reason : undefined);

  for (const [name, transportOf] of transports) {
    it(`${name}: LeaseBatch and Batch answer each refused operation with its reason`, async () => {
      for (const url of [s.server.url, slow.url]) {
        const t = transportOf(url);
        const lease = createClient(LeaseService, t);
        const store = createClient(FencedStoreService, t);
        // Each server has a key prefix (and signing key) of its own: the token is its own.
        const own = clientsFor(url);
        const r = uniqueResource("json");
        const taken = await own.lease.acquire({ resource: r, ttl: ttl(10), holder: "A" });
        await own.lease.release({ token: taken.token });
        const batch = await lease.leaseBatch({ ops: [{ op: { case: "release", value: { token: taken.token } } }, { op: { case: "acquire", value: { resource: r, ttl: ttl(10) } } }] });
        expect(reasonIn(errorOf(batch.results[0])), `${name} at ${url}`).to.equal("LEASE_NOT_FOUND");
        const writes = await store.batch({ writes: [{ write: { case: "put", value: { resource: r, key: "k", value: new Uint8Array([1]), mutation: { token: taken.token, mode: FenceMode.LIVE } } } }] });
        const w = writes.results[0].result;
        expect(w.case, `${name} at ${url}`).to.equal("error");
        expect(reasonIn(w.case === "error" ? w.value : undefined), `${name} at ${url}`).to.be.a("string").and.not.equal("");
        await own.lease.release({ token: tokenOf(batch.results[1]) });
      }
    });
  }

  it("gRPC JSON: KeepAlive answers a lease that does not exist with LEASE_NOT_FOUND", async () => {
    const lease = createClient(LeaseService, transports[2][1](s.server.url));
    async function* one() {
      yield { leaseId: 123456789n };
    }
    for await (const answer of lease.keepAlive(one())) {
      expect(answer.leaseId).to.equal(123456789n);
      expect(reasonIn(answer.error)).to.equal("LEASE_NOT_FOUND");
      break;
    }
  });
});
