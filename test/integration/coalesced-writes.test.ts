// FencedStoreService.Batch: many independent writes in one call, each answered exactly as alone, and
// packed by the server into as few etcd requests as the committer allows.
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { BatchWriteSchema, type BatchResult, type BatchWrite } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { bytes, delta, failureOf, startStack, text, ttl, writeCounts, type Stack } from "../harness/batching.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { uniqueResource } from "../harness/suite.js";

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
    // Concurrent, as two calls sent at once: one applies, the other is answered from its record.
    expect(got.slice(0, 2).map((g) => g.replayed).sort()).to.deep.equal([false, true]);
    expect(got.slice(0, 2).map((g) => g.fence)).to.deep.equal([t.generation, t.generation]);
    expect(got[2]).to.deep.include({ code: Code.InvalidArgument, reason: "IDEMPOTENCY_KEY_REUSED" });
    const revisions = res.results.slice(0, 2).map((r) => (r.result.value as { revision: bigint }).revision);
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
