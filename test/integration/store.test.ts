// The fenced store: transactions, idempotency, listing, and the fence itself.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const text = (b: Uint8Array) => Buffer.from(b).toString();

describe("the fenced store", () => {
  const s = useServer();

  async function acquire(resource: string, holder = "A"): Promise<FencingToken> {
    return (await s.lease.acquire({ resource, ttl: ttl(10), holder })).token!;
  }

  it("Txn applies all its puts and deletes, or none of them when the token is stale", async () => {
    const resource = uniqueResource("txn");
    const old = await acquire(resource, "old");
    await s.store.put({ resource, key: "gone", value: Buffer.from("x"), mutation: { token: old } });
    await s.lease.release({ token: old });
    const cur = await acquire(resource, "current");

    const ok = await s.store.txn({
      resource,
      mutation: { token: cur },
      ops: [
        { op: { case: "put", value: { key: "a", value: Buffer.from("1") } } },
        { op: { case: "put", value: { key: "b", value: Buffer.from("2") } } },
        { op: { case: "delete", value: { key: "gone" } } },
      ],
    });
    expect(ok.commit!.fence).to.equal(cur.generation);
    expect(text((await s.store.get({ resource, key: "a" })).value)).to.equal("1");
    expect((await s.store.get({ resource, key: "gone" })).found).to.equal(false);

    const err = ConnectError.from(
      await s.store
        .txn({
          resource,
          mutation: { token: old },
          ops: [
            { op: { case: "put", value: { key: "a", value: Buffer.from("stale") } } },
            { op: { case: "put", value: { key: "c", value: Buffer.from("stale") } } },
          ],
        })
        .catch((e) => e),
    );
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(err.findDetails(ErrorInfoSchema)[0]).to.deep.include({ reason: "STALE_TOKEN", domain: "fencekeeper.io" });
    expect(err.findDetails(ErrorInfoSchema)[0].metadata).to.include({ fence: String(cur.generation) });
    expect(text((await s.store.get({ resource, key: "a" })).value)).to.equal("1");
    expect((await s.store.get({ resource, key: "c" })).found).to.equal(false);
  });

  it("under concurrent writers of two generations, every Txn is whole and none older than the fence lands", async () => {
    const resource = uniqueResource("concurrent");
    const old = await acquire(resource, "old");
    await s.lease.release({ token: old });
    const cur = await acquire(resource, "current");
    const write = (token: FencingToken, i: number) =>
      s.store
        .txn({
          resource,
          mutation: { token },
          ops: ["x", "y", "z"].map((key) => ({ op: { case: "put" as const, value: { key, value: Buffer.from(`${token.generation}:${i}`) } } })),
        })
        .then(
          (res) => ({ generation: token.generation, revision: res.commit!.revision, reason: "" }),
          (e) => ({ generation: token.generation, revision: 0n, reason: ConnectError.from(e).findDetails(ErrorInfoSchema)[0]?.reason }),
        );
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => write(i % 2 ? old : cur, i)));
    const values = await Promise.all(["x", "y", "z"].map(async (key) => text((await s.store.get({ resource, key })).value)));
    expect(new Set(values).size).to.equal(1); // one transaction's values, never a mix
    expect(values[0].startsWith(`${cur.generation}:`)).to.equal(true);

    const current = results.filter((r) => r.generation === cur.generation);
    const stale = results.filter((r) => r.generation === old.generation);
    expect(current.every((r) => r.reason === "")).to.equal(true);
    expect(stale.every((r) => r.reason === "" || r.reason === "STALE_TOKEN")).to.equal(true);
    // An old-generation write may land only before the first current-generation write committed.
    const firstCurrent = current.reduce((min, r) => (r.revision < min ? r.revision : min), current[0].revision);
    for (const r of stale.filter((r) => r.reason === "")) expect(r.revision < firstCurrent).to.equal(true);
  });

  it("a retry with the same idempotency key returns the first result and applies nothing", async () => {
    const resource = uniqueResource("idem");
    const token = await acquire(resource);
    const put = (value: string) => s.store.put({ resource, key: "k", value: Buffer.from(value), mutation: { token, idempotencyKey: "req-1" } });
    const first = await put("v1");
    expect(first.commit!.replayed).to.equal(false);
    const again = await put("v1");
    expect(again.commit).to.deep.include({ revision: first.commit!.revision, fence: first.commit!.fence, replayed: true });
    const got = await s.store.get({ resource, key: "k" });
    expect(got.modRevision).to.equal(first.commit!.revision);

    const err = ConnectError.from(await put("v2").catch((e) => e));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.findDetails(ErrorInfoSchema)[0].reason).to.equal("IDEMPOTENCY_KEY_REUSED");
    expect(text((await s.store.get({ resource, key: "k" })).value)).to.equal("v1");
  });

  it("a retry is answered even after the fence has moved on", async () => {
    const resource = uniqueResource("idem-after-handover");
    const old = await acquire(resource, "old");
    const req = { resource, key: "k", value: Buffer.from("v"), mutation: { token: old, idempotencyKey: "once" } };
    const first = await s.store.put(req);
    await s.lease.release({ token: old });
    const cur = await acquire(resource, "current");
    await s.store.put({ resource, key: "k", value: Buffer.from("new"), mutation: { token: cur } });
    const retry = await s.store.put(req);
    expect(retry.commit).to.deep.include({ revision: first.commit!.revision, replayed: true });
    expect(text((await s.store.get({ resource, key: "k" })).value)).to.equal("new");
  });

  it("concurrent requests with one idempotency key apply once", async () => {
    const resource = uniqueResource("idem-race");
    const token = await acquire(resource);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token, idempotencyKey: "race" } })),
    );
    expect(results.filter((r) => !r.commit!.replayed)).to.have.length(1);
    expect(new Set(results.map((r) => r.commit!.revision)).size).to.equal(1);
  });

  it("Range lists a prefix in pages that all read one snapshot", async () => {
    const resource = uniqueResource("range");
    const token = await acquire(resource);
    for (let i = 0; i < 7; i++) {
      await s.store.put({ resource, key: `item/${i}`, value: Buffer.from(String(i)), mutation: { token } });
    }
    await s.store.put({ resource, key: "other", value: Buffer.from("x"), mutation: { token } });
    const first = await s.store.range({ resource, prefix: "item/", pageSize: 3 });
    expect(first.entries.map((e) => e.key)).to.deep.equal(["item/0", "item/1", "item/2"]);
    // A write after the first page is not seen by the later pages of the same listing.
    await s.store.put({ resource, key: "item/5", value: Buffer.from("changed"), mutation: { token } });
    const second = await s.store.range({ resource, prefix: "item/", pageSize: 3, pageToken: first.nextPageToken });
    const third = await s.store.range({ resource, prefix: "item/", pageSize: 3, pageToken: second.nextPageToken });
    expect(second.entries.map((e) => e.key)).to.deep.equal(["item/3", "item/4", "item/5"]);
    expect(text(second.entries[2].value)).to.equal("5");
    expect(third.entries.map((e) => e.key)).to.deep.equal(["item/6"]);
    expect(third.nextPageToken).to.equal("");
    expect(second.revision).to.equal(first.revision);
    const keysOnly = await s.store.range({ resource, keysOnly: true });
    expect(keysOnly.entries.map((e) => e.key)).to.include("other");
    expect(keysOnly.entries.every((e) => e.value.length === 0)).to.equal(true);
  });

  it("GetFence reports the greatest accepted and the last issued generation", async () => {
    const resource = uniqueResource("fence");
    expect(await s.store.getFence({ resource })).to.deep.include({ fence: 0n, lastIssued: 0n });
    const token = await acquire(resource);
    expect(await s.store.getFence({ resource })).to.deep.include({ fence: 0n, lastIssued: token.generation });
    await s.store.delete({ resource, key: "absent", mutation: { token } });
    expect(await s.store.getFence({ resource })).to.deep.include({ fence: token.generation, lastIssued: token.generation });
  });

  it("resources are fenced independently", async () => {
    const x = uniqueResource("x");
    const y = uniqueResource("y");
    const tx = await acquire(x);
    const ty = await acquire(y);
    await s.store.put({ resource: y, key: "k", value: Buffer.from("y"), mutation: { token: ty } });
    await s.store.put({ resource: x, key: "k", value: Buffer.from("x"), mutation: { token: tx } });
    expect((await s.store.getFence({ resource: x })).fence).to.equal(tx.generation);
    expect((await s.store.getFence({ resource: y })).fence).to.equal(ty.generation);
  });
});
