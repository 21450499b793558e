// FencedStoreService.Batch: many independent writes in one call, each answered exactly as alone, and
// packed by the server into as few etcd requests as the committer allows.
import { inspect } from "node:util";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { BatchWriteSchema, type BatchResult, type BatchWrite } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { bytes, delta, failureOf, startStack, text, ttl, writeCounts, type Stack } from "../harness/batching.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import type { TestServer } from "../harness/server.js";
import { layout } from "../harness/batching.js";
import { scrape } from "../operations/support/metrics.js";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import {
  FencekeeperClient,
  IdempotencyKeyReusedError,
  StaleTokenError,
  UnavailableError,
  type ClientOptions,
  type FencekeeperError,
  type Token,
} from "../../client/index.js";

const put = (token: FencingToken, key: string, value: string, idempotencyKey = ""): BatchWrite =>
  create(BatchWriteSchema, { write: { case: "put", value: { resource: token.resource, key, value: bytes(value), mutation: { token, idempotencyKey } } } });
const del = (token: FencingToken, key: string): BatchWrite =>
  create(BatchWriteSchema, { write: { case: "delete", value: { resource: token.resource, key, mutation: { token } } } });

/** A result as a test reads it: the commit, or the code and ErrorInfo reason. */
function outcome(r: BatchResult): { fence?: bigint; replayed?: boolean; code?: Code; reason?: string; message?: string } {
  if (r.result.case === "commit") return { fence: r.result.value.fence, replayed: r.result.value.replayed };
  if (r.result.case === "error") {
    const info = r.result.value.details.map((d) => anyUnpack(d, ErrorInfoSchema)).find((x) => x !== undefined);
    return { code: r.result.value.code, reason: info?.reason ?? "", message: r.result.value.message };
  }
  throw new Error("a result with neither commit nor error");
}

describe("coalesced writes: FencedStoreService.Batch", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let st: Stack;

  before(async function () {
    etcd = await startEtcd();
    st = await startStack({ etcd });
  });
  after(async function () {
    await st?.server.stop();
    st?.kv.close();
    await etcd?.destroy();
  });

  const acquire = async (resource: string, holder = "A") => (await st.lease.acquire({ resource, ttl: ttl(30), holder })).token!;

  it("mixed generations in one batch: the stale writes are refused STALE_TOKEN, the others applied", async () => {
    const resource = uniqueResource("mixed");
    const old = await acquire(resource, "old");
    await st.lease.release({ token: old });
    const cur = await acquire(resource, "current");
    await st.store.put({ resource, key: "k", value: bytes("first"), mutation: { token: cur } });
    const other = await acquire(uniqueResource("other"));

    const res = await st.store.batch({
      writes: [put(old, "k", "stale"), put(cur, "a", "1"), del(old, "k"), put(other, "b", "2"), put(cur, "k", "second"), put(old, "c", "stale")],
    });
    const got = res.results.map(outcome);
    expect(got.map((g) => g.reason ?? "ok")).to.deep.equal(["STALE_TOKEN", "ok", "STALE_TOKEN", "ok", "ok", "STALE_TOKEN"]);
    expect(got[0].code).to.equal(Code.FailedPrecondition);
    expect(got[0].message).to.match(/stale token/);
    expect(got[1].fence).to.equal(cur.generation);
    expect(got[3].fence).to.equal(other.generation);
    expect(text((await st.store.get({ resource, key: "k" })).value)).to.equal("second");
    expect(text((await st.store.get({ resource, key: "a" })).value)).to.equal("1");
    expect((await st.store.get({ resource, key: "c" })).found).to.equal(false);
    expect(text((await st.store.get({ resource: other.resource, key: "b" })).value)).to.equal("2");
  });

  it("an idempotent retry inside one batch is answered from the first, and a reused key with another request is refused", async () => {
    const resource = uniqueResource("idem");
    const t = await acquire(resource);
    const key = `idem-${resource}`;
    const res = await st.store.batch({ writes: [put(t, "x", "v1", key), put(t, "x", "v1", key), put(t, "y", "other", key)] });
    const got = res.results.map(outcome);
    const reused = { code: Code.InvalidArgument, reason: "IDEMPOTENCY_KEY_REUSED" };
    // The writes of one batch are concurrent, as three calls sent at once: exactly one applies. If it is
    // one of the two alike, the other is answered from its record and the third is refused; if it is the
    // third, both of the others are refused.
    const applied = got.filter((g) => g.replayed === false);
    expect(applied, inspect(got)).to.have.length(1);
    const revisions = res.results.map((r) => (r.result.case === "commit" ? r.result.value.revision : undefined));
    if (got[2].replayed === false) {
      expect(got[0], inspect(got)).to.deep.include(reused);
      expect(got[1], inspect(got)).to.deep.include(reused);
      expect(text((await st.store.get({ resource, key: "y" })).value)).to.equal("other");
      expect((await st.store.get({ resource, key: "x" })).found).to.equal(false);
      return;
    }
    expect(got.slice(0, 2).map((g) => g.replayed).sort(), inspect(got)).to.deep.equal([false, true]);
    expect(got.slice(0, 2).map((g) => g.fence)).to.deep.equal([t.generation, t.generation]);
    expect(got[2]).to.deep.include(reused);
    expect(revisions[0]).to.equal(revisions[1]);
    expect(text((await st.store.get({ resource, key: "x" })).value)).to.equal("v1");
    expect((await st.store.get({ resource, key: "y" })).found).to.equal(false);
    // The same retry alone, later, gets the same answer.
    const alone = await st.store.put({ resource, key: "x", value: bytes("v1"), mutation: { token: t, idempotencyKey: key } });
    expect(alone.commit).to.deep.include({ fence: t.generation, replayed: true });
  });

  it("a write that is bad on its own is refused on its own, with the status it would get alone", async () => {
    const t = await acquire(uniqueResource("bad"));
    const mismatched = create(BatchWriteSchema, { write: { case: "put", value: { resource: "elsewhere", key: "k", value: bytes("v"), mutation: { token: t } } } });
    const res = await st.store.batch({ writes: [put(t, "", "empty key"), put(t, "fine", "1"), create(BatchWriteSchema, {}), mismatched] });
    const got = res.results.map(outcome);
    expect(got.map((g) => g.code)).to.deep.equal([Code.InvalidArgument, undefined, Code.InvalidArgument, Code.InvalidArgument]);
    expect(got[1].fence).to.equal(t.generation);
    expect(got[2].message).to.match(/writes\[2\] sets neither put nor delete/);
    expect(got[3].message).to.match(/use the token of the resource you write/);
  });

  it("refuses a batch over its bounds as a whole, INVALID_ARGUMENT BATCH_TOO_LARGE, and applies nothing", async () => {
    const resource = uniqueResource("bounds");
    const t = await acquire(resource);
    const many = Array.from({ length: 1001 }, (_, i) => put(t, `k${i}`, "v"));
    const tooMany = failureOf(await st.store.batch({ writes: many }).catch((e) => e));
    expect(tooMany).to.deep.include({ code: Code.InvalidArgument, reason: "BATCH_TOO_LARGE" });
    expect(tooMany.message).to.match(/1001 writes; at most 1000 .*split it/);

    const big = new Uint8Array(700 * 1024).fill(120);
    const heavy = Array.from({ length: 4 }, (_, i) => put(t, `big${i}`, "")).map((w) => {
      (w.write.value as { value: Uint8Array }).value = big;
      return w;
    });
    const tooHeavy = failureOf(await st.store.batch({ writes: heavy }).catch((e) => e));
    expect(tooHeavy).to.deep.include({ code: Code.InvalidArgument, reason: "BATCH_TOO_LARGE" });
    expect(tooHeavy.message).to.match(/2867200 bytes of values; at most 2097152/);

    const empty = failureOf(await st.store.batch({ writes: [] }).catch((e) => e));
    expect(empty.code).to.equal(Code.InvalidArgument);
    expect((await st.store.get({ resource, key: "k0" })).found).to.equal(false);
    expect((await st.store.getFence({ resource })).fence).to.equal(0n);
  });

  it("the writes of one batch go to etcd together: 60 writes on 60 resources in one etcd request", async () => {
    const tokens = await Promise.all(Array.from({ length: 60 }, (_, i) => acquire(uniqueResource(`packed${i}`))));
    const before = await writeCounts(st.server);
    const res = await st.store.batch({ writes: tokens.map((t) => put(t, "k", "v")) });
    const used = delta(await writeCounts(st.server), before);
    expect(res.results.map((r) => r.result.case)).to.deep.equal(tokens.map(() => "commit"));
    expect(new Set(res.results.map((r) => (r.result.value as { revision: bigint }).revision)).size).to.equal(1);
    expect(used.requests, "etcd write requests for one batch of 60").to.equal(1);
  });
});

describe("coalesced writes: the TypeScript SDK", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;
  let st: Stack;
  const clients: FencekeeperClient[] = [];
  const client = (o: ClientOptions = {}) => {
    const fk = new FencekeeperClient({ servers: st.server.url, fenceMode: "order", ...o });
    clients.push(fk);
    return fk;
  };
  /** Calls the server started of each store method since `before`. */
  const started = async (server: TestServer) => {
    const s = await scrape(server);
    const of = (m: string) => s.value("grpc_server_started_total", { grpc_service: "fencekeeper.v1.FencedStoreService", grpc_method: m });
    return { put: of("Put"), delete: of("Delete"), batch: of("Batch") };
  };
  const since = (a: { put: number; delete: number; batch: number }, b: typeof a) => ({ put: a.put - b.put, delete: a.delete - b.delete, batch: a.batch - b.batch });

  before(async function () {
    etcd = await startEtcd();
    st = await startStack({ etcd });
  });
  after(async function () {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await st?.server.stop();
    st?.kv.close();
    await etcd?.destroy();
  });

  it("a lone write goes out as a plain Put at once, not as a Batch", async () => {
    const fk = client();
    const lease = await fk.acquire(uniqueResource("lone"));
    const before = await started(st.server);
    const c = await fk.store.put(lease.token, "k", "v");
    await fk.store.delete(lease.token, "k");
    expect(c.fence).to.equal(lease.token.generation);
    expect(since(await started(st.server), before)).to.deep.equal({ put: 1, delete: 1, batch: 0 });
  });

  it("64 concurrent writes of one client go in a few Batch calls, each with its own answer", async () => {
    const fk = client();
    const leases = await Promise.all(Array.from({ length: 4 }, (_, i) => fk.acquire(uniqueResource(`burst${i}`))));
    const before = await started(st.server);
    const commits = await Promise.all(Array.from({ length: 64 }, (_, i) => fk.store.put(leases[i % 4].token, `k${i}`, `v${i}`)));
    const used = since(await started(st.server), before);
    expect(commits.map((c) => c.fence)).to.deep.equal(commits.map((_, i) => leases[i % 4].token.generation));
    expect(used.batch, `calls: ${JSON.stringify(used)}`).to.be.within(1, 4);
    expect(used.put + used.batch, `calls: ${JSON.stringify(used)}`).to.be.at.most(4);
    for (const i of [0, 17, 63]) expect(text((await fk.store.get(leases[i % 4].token.resource, `k${i}`)).value)).to.equal(`v${i}`);

    // With coalescing off, one call a write.
    const plain = client({ coalesceWrites: false });
    const before2 = await started(st.server);
    await Promise.all(Array.from({ length: 64 }, (_, i) => plain.store.put(leases[i % 4].token, `p${i}`, "x")));
    expect(since(await started(st.server), before2)).to.deep.equal({ put: 64, delete: 0, batch: 0 });
  });

  it("writes that busy calls left waiting go together in the next call, with no timer: two Puts in flight, then one Batch", async () => {
    const fk = client();
    const lease = await fk.acquire(uniqueResource("busy"));
    const before = await started(st.server);
    const first = fk.store.put(lease.token, "first", "1");
    await Promise.resolve(); // the first has left: one call in flight
    const second = fk.store.put(lease.token, "second", "2");
    await Promise.resolve(); // two calls in flight: the rest wait for one of them
    const rest = Array.from({ length: 10 }, (_, i) => fk.store.put(lease.token, `rest${i}`, "3"));
    const commits = await Promise.all([first, second, ...rest]);
    expect(commits.map((c) => c.fence)).to.deep.equal(commits.map(() => lease.token.generation));
    expect(since(await started(st.server), before)).to.deep.equal({ put: 2, delete: 0, batch: 1 });
  });

  it("concurrent writes in one Batch: stale ones raise StaleTokenError, the others commit, retries replay", async () => {
    const fk = client();
    const resource = uniqueResource("sdk-mixed");
    const old = await fk.acquire(resource);
    const oldToken = old.token;
    await old.release();
    const cur = await fk.acquire(resource);
    await fk.store.put(cur.token, "k", "current");
    const before = await started(st.server);
    const outcomes = await Promise.allSettled([
      fk.store.put(cur.token, "a", "1", { idempotencyKey: `${resource}-a` }),
      fk.store.put(oldToken, "k", "stale"),
      fk.store.put(cur.token, "a", "1", { idempotencyKey: `${resource}-a` }),
      fk.store.delete(oldToken, "k"),
      fk.store.put(cur.token, "b", "2"),
      fk.store.put(cur.token, "c", "3", { idempotencyKey: `${resource}-a` }),
    ]);
    expect(since(await started(st.server), before)).to.deep.include({ batch: 1 });
    const [a1, stale, a2, staleDel, b, reused] = outcomes;
    expect(stale.status === "rejected" && stale.reason).to.be.instanceOf(StaleTokenError);
    expect(staleDel.status === "rejected" && staleDel.reason).to.be.instanceOf(StaleTokenError);
    expect(reused.status === "rejected" && reused.reason).to.be.instanceOf(IdempotencyKeyReusedError);
    expect(b.status).to.equal("fulfilled");
    const replays = [a1, a2].map((o) => (o.status === "fulfilled" ? o.value.replayed : "failed"));
    expect(replays.sort()).to.deep.equal([false, true]);
    expect(text((await fk.store.get(resource, "k")).value)).to.equal("current");
    expect((await fk.store.get(resource, "c")).found).to.equal(false);
    // The same idempotent write again, alone: answered from the record.
    expect((await fk.store.put(cur.token, "a", "1", { idempotencyKey: `${resource}-a` })).replayed).to.equal(true);
  });

  it("against a server without Batch (UNIMPLEMENTED), falls back to one Put a write", async () => {
    const seen: string[] = [];
    const old = await startOldServer(seen);
    try {
      const fk = new FencekeeperClient({ servers: old.url });
      clients.push(fk);
      const token = { resource: "r", generation: 7n, leaseId: 1n } as Token;
      const commits = await Promise.all(Array.from({ length: 10 }, (_, i) => fk.store.put(token, `k${i}`, "v")));
      expect(commits.map((c) => c.fence)).to.deep.equal(commits.map(() => 7n));
      // One Batch tried, refused, then each write alone; later bursts go straight to Puts.
      await Promise.all(Array.from({ length: 5 }, (_, i) => fk.store.put(token, `again${i}`, "v")));
      expect(seen.filter((m) => m === "Batch").length).to.equal(1);
      expect(seen.filter((m) => m === "Put").length).to.equal(15);
    } finally {
      old.close();
    }
  });

  it("a server SIGKILLed mid-batch: writers see UnavailableError, acknowledged writes are in etcd, none half-applied", async () => {
    const stack = await startStack({ etcd });
    const fk = new FencekeeperClient({ servers: stack.server.url, fenceMode: "order", callTimeoutMs: 10_000 });
    clients.push(fk);
    try {
      const leases = await Promise.all(Array.from({ length: 4 }, (_, i) => fk.acquire(uniqueResource(`kill${i}`), { ttl: 60_000 })));
      const calls: { resource: string; key: string; value: string; revision?: bigint; error?: unknown }[] = [];
      let killed = false;
      const before = await started(stack.server);
      const writers = Array.from({ length: 32 }, async (_, w) => {
        for (let round = 0; ; round++) {
          const token = leases[w % 4].token;
          const call: (typeof calls)[number] = { resource: token.resource, key: `w${w}r${round}`, value: `v-${w}-${round}` };
          calls.push(call);
          try {
            call.revision = (await fk.store.put(token, call.key, call.value)).revision;
          } catch (e) {
            call.error = e;
            if (killed) return;
          }
        }
      });
      await eventually(() => calls.filter((c) => c.revision !== undefined).length >= 300, "300 acknowledged writes", 30_000);
      const used = since(await started(stack.server), before);
      killed = true;
      await stack.server.stop("SIGKILL");
      await Promise.all(writers);
      expect(used.batch, `calls before the kill: ${JSON.stringify(used)}`).to.be.greaterThan(0);
      const failed = calls.filter((c) => c.error !== undefined);
      expect(failed.length).to.be.greaterThan(0);
      const odd = failed.filter((c) => !(c.error instanceof UnavailableError) || (c.error as FencekeeperError).reason !== undefined);
      expect(odd.map((c) => `${c.key}: ${String(c.error)}`), "failures other than UnavailableError").to.deep.equal([]);
      const L = layout(stack.prefix);
      const problems: string[] = [];
      let ambiguous = 0;
      for (const c of calls) {
        const kv = (await stack.kv.kv.range({ key: Buffer.from(L.data(c.resource, c.key)) })).kvs[0];
        if (c.revision !== undefined) {
          if (!kv || String(kv.mod_revision) !== String(c.revision) || kv.value.toString() !== c.value) problems.push(`${c.key} acknowledged at ${c.revision}, etcd has ${kv?.value} at ${kv?.mod_revision}`);
        } else if (kv) {
          ambiguous++;
          if (kv.value.toString() !== c.value) problems.push(`${c.key} failed, etcd has ${kv.value}`);
        }
      }
      expect(problems).to.deep.equal([]);
      expect(ambiguous).to.be.at.most(failed.length);
    } finally {
      await stack.server.stop();
      stack.kv.close();
    }
  });
});

/** A server of the contract before Batch: Put and Delete answer a fixed commit, anything else UNIMPLEMENTED. */
async function startOldServer(seen: string[]): Promise<{ url: string; close(): void }> {
  const handler = connectNodeAdapter({
    routes(router) {
      router.service(FencedStoreService, {
        put(req) {
          seen.push("Put");
          return { commit: { revision: 1n, fence: req.mutation?.token?.generation ?? 0n } };
        },
        delete(req) {
          seen.push("Delete");
          return { commit: { revision: 1n, fence: req.mutation?.token?.generation ?? 0n } };
        },
      });
    },
  });
  const server = http2.createServer((req, res) => {
    if (req.url?.endsWith("/Batch")) seen.push("Batch");
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, close: () => server.close() };
}
