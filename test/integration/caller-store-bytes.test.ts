// The bytes of store entries one principal pays for, over all resources (--max-store-bytes-per-caller,
// docs/budgets.md), against a real etcd and real servers with JWT authentication. Before it, the quota
// was per resource only: a principal holding many resources could store --max-bytes-per-resource in each.
//  - a principal writing across many resources is refused at its budget, naming it; deletes free it;
//    another principal goes on;
//  - a resource's bytes are charged to the principal that last put into it: a put by another takes
//    them over (refused when its budget has no room for them), a delete by another comes off the payer's;
//  - two replicas writing for one principal across many resources at once, some under stale tokens:
//    every principal's ledger is the exact sum of the bytes of the resources it pays for, and none
//    passes its budget.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { decodeUsage, principalTag } from "../../server/etcd/keys.js";
import { TestIssuer, type BearerClients } from "../harness/bearer.js";
import type { TestServer } from "../harness/server.js";
import { uniqueResource, useReplicas } from "../harness/suite.js";

const KiB = 1024;
const BUDGET = 64 * KiB;
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const infoOf = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
const reasonOf = (err: unknown) => infoOf(err)?.reason ?? `(no reason: ${ConnectError.from(err).message})`;

describe("the store bytes a principal pays for, over all resources (--max-store-bytes-per-caller 64 KiB)", function () {
  this.timeout(120_000);
  let dir: string;
  let issuer: TestIssuer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-caller-store-"));
    issuer = await TestIssuer.create(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const r = useReplicas(2, () => [...issuer.args, "--max-store-bytes-per-caller", String(BUDGET), "--max-history-bytes-per-second", "0"]);
  const as = (server: TestServer, sub: string) => issuer.as(server.url, sub);

  /** A principal's ledger as etcd holds it. */
  const ledgerOf = async (principal: string) => decodeUsage((await r.direct.kv.range({ key: r.layout.callerStoreKey(principalTag(principal)) })).kvs[0]).bytes;
  /** A resource's usage key as etcd holds it: its bytes and its payer's tag. */
  const usageOf = async (resource: string) => decodeUsage((await r.direct.kv.range({ key: r.layout.usageKey(resource) })).kvs[0]);

  const acquire = async (c: BearerClients, resource: string) => (await c.lease.acquire({ resource, ttl: ttl(60) })).token!;

  it("a principal putting 8 KiB into each of 20 resources is refused at its budget, QUOTA_EXCEEDED naming it; a delete frees it; another principal goes on", async () => {
    const alice = await as(r.servers[0], "alice-many");
    const bob = await as(r.servers[1], "bob-many");
    const resources = Array.from({ length: 20 }, () => uniqueResource("many"));
    const tokens = await Promise.all(resources.map((r) => acquire(alice, r)));
    const value = randomBytes(8000);
    // Each entry counts its key (1 byte) and its value: 8001 bytes; eight fit 64 KiB (64,008), a ninth does not.
    let done = 0;
    let refusal: ConnectError | undefined;
    for (const [i, resource] of resources.entries()) {
      try {
        await alice.store.put({ resource, key: "k", value, mutation: { token: tokens[i] } });
        done++;
      } catch (e) {
        refusal = ConnectError.from(e);
        break;
      }
    }
    expect(done, "puts let in").to.equal(8);
    expect(refusal?.code).to.equal(Code.ResourceExhausted);
    expect(reasonOf(refusal)).to.equal("QUOTA_EXCEEDED");
    expect(infoOf(refusal).metadata).to.include({
      budget: "caller_store_bytes",
      limit: String(BUDGET),
      used: "64008",
      delta: "8001",
      flag: "--max-store-bytes-per-caller",
      principal: "alice-many",
      resource: resources[8],
    });
    expect(refusal!.rawMessage).to.contain('"alice-many"').and.contain(`--max-store-bytes-per-caller ${BUDGET}`).and.contain("Delete entries");
    expect((await alice.store.get({ resource: resources[8], key: "k" })).found, "nothing written").to.equal(false);
    expect(await ledgerOf("alice-many")).to.equal(64008n);

    // Another principal has a budget of its own.
    const theirs = uniqueResource("many-bob");
    await bob.store.put({ resource: theirs, key: "k", value, mutation: { token: await acquire(bob, theirs) } });
    expect(await ledgerOf("bob-many")).to.equal(8001n);

    // An overwrite counts once; a delete frees its bytes, and the refused put now fits.
    await alice.store.put({ resource: resources[0], key: "k", value: randomBytes(4000), mutation: { token: tokens[0] } });
    expect(await ledgerOf("alice-many")).to.equal(64008n - 4000n);
    await alice.store.delete({ resource: resources[1], key: "k", mutation: { token: tokens[1] } });
    await alice.store.put({ resource: resources[8], key: "k", value, mutation: { token: tokens[8] } });
    expect(await ledgerOf("alice-many")).to.equal(64008n - 4000n);
  });

  it("a put by another principal takes a resource's bytes over (refused when they do not fit its budget); a delete by another comes off the payer's", async () => {
    const alice = await as(r.servers[0], "alice-takeover");
    const bob = await as(r.servers[1], "bob-takeover");
    const shared = uniqueResource("takeover");
    const big = uniqueResource("takeover-big");
    const a1 = await acquire(alice, shared);
    await alice.store.put({ resource: shared, key: "a", value: randomBytes(10_000), mutation: { token: a1 } });
    await alice.store.put({ resource: shared, key: "b", value: randomBytes(5_000), mutation: { token: a1 } });
    await alice.lease.release({ token: a1 });
    expect(await ledgerOf("alice-takeover")).to.equal(15_002n);
    expect((await usageOf(shared)).payer).to.equal(principalTag("alice-takeover"));

    // bob holds the resource now and deletes one entry: alice pays less, bob nothing.
    const b1 = await acquire(bob, shared);
    await bob.store.delete({ resource: shared, key: "b", mutation: { token: b1 } });
    expect(await ledgerOf("alice-takeover")).to.equal(10_001n);
    expect(await ledgerOf("bob-takeover")).to.equal(0n);
    expect((await usageOf(shared)).payer).to.equal(principalTag("alice-takeover"));

    // bob puts: the resource is his, with what it stores.
    await bob.store.put({ resource: shared, key: "c", value: randomBytes(1_000), mutation: { token: b1 } });
    expect(await ledgerOf("alice-takeover")).to.equal(0n);
    expect(await ledgerOf("bob-takeover")).to.equal(11_002n);
    expect((await usageOf(shared))).to.include({ bytes: 11_002n, payer: principalTag("bob-takeover") });
    await bob.lease.release({ token: b1 });

    // alice fills most of her budget elsewhere; a put into bob's resource would take over more than is left.
    const a2 = await acquire(alice, big);
    await alice.store.put({ resource: big, key: "k", value: randomBytes(60_000), mutation: { token: a2 } });
    const a3 = await acquire(alice, shared);
    const refused = await alice.store.put({ resource: shared, key: "d", value: Buffer.from("x"), mutation: { token: a3 } }).then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(refused?.code).to.equal(Code.ResourceExhausted);
    expect(infoOf(refused)).to.include({ reason: "QUOTA_EXCEEDED" });
    expect(infoOf(refused).metadata).to.include({ budget: "caller_store_bytes", used: "60001", delta: "11004", resource: shared });
    expect(refused!.rawMessage).to.contain("takes over").and.contain(`Delete entries of "${shared}" first`);
    expect((await usageOf(shared))).to.include({ bytes: 11_002n, payer: principalTag("bob-takeover") });
    // What the hint says works: a delete of the resource's entries, then the put.
    await alice.store.delete({ resource: shared, key: "a", mutation: { token: a3 } });
    await alice.store.delete({ resource: shared, key: "c", mutation: { token: a3 } });
    expect(await ledgerOf("bob-takeover")).to.equal(0n);
    await alice.store.put({ resource: shared, key: "d", value: Buffer.from("x"), mutation: { token: a3 } });
    expect(await ledgerOf("alice-takeover")).to.equal(60_001n + 2n);
  });

  it("a Batch into a resource another principal pays for, a delete charged to it and a put that takes it over: neither waits on the other", async () => {
    const erin = await as(r.servers[0], "erin-batch");
    const frank = await as(r.servers[0], "frank-batch");
    const resource = uniqueResource("batch-takeover");
    const e1 = await acquire(erin, resource);
    await erin.store.put({ resource, key: "a", value: Buffer.alloc(100), mutation: { token: e1 } });
    await erin.lease.release({ token: e1 });
    const f1 = await acquire(frank, resource);
    const put = (key: string) => ({ write: { case: "put" as const, value: { resource, key, value: Buffer.alloc(10), mutation: { token: f1 } } } });
    const del = (key: string) => ({ write: { case: "delete" as const, value: { resource, key, mutation: { token: f1 } } } });
    // The delete is charged to erin and queues with its Batch; the put takes the resource over, in a
    // transaction of its own whose keys the queued delete holds. A deadlock between them would last until
    // the deadline: its DEADLINE_EXCEEDED fails the test.
    const { results } = await frank.store.batch({ writes: [del("a"), put("b")] }, { timeoutMs: 30_000 });
    expect(results.map((r) => r.result.case)).to.deep.equal(["commit", "commit"]);
    expect(await ledgerOf("erin-batch")).to.equal(0n);
    expect(await ledgerOf("frank-batch")).to.equal(11n);
  });

  it("a Txn of --max-txn-ops (64) operations commits under the budget, alone and beside writes of other resources of its principal", async () => {
    const dave = await as(r.servers[0], "dave-txn");
    const big = uniqueResource("txn-big");
    const small = Array.from({ length: 6 }, () => uniqueResource("txn-small"));
    const [token, ...tokens] = await Promise.all([big, ...small].map((r) => acquire(dave, r)));
    const ops = (tag: string) => Array.from({ length: 64 }, (_, i) => ({ op: { case: "put" as const, value: { key: `${tag}${i}`, value: Buffer.from("v") } } }));
    await dave.store.txn({ resource: big, mutation: { token }, ops: ops("alone") });
    await Promise.all([
      dave.store.txn({ resource: big, mutation: { token }, ops: ops("beside") }),
      ...small.map((resource, i) => dave.store.put({ resource, key: "k", value: Buffer.from("x"), mutation: { token: tokens[i] } })),
    ]);
    expect((await dave.store.range({ resource: big, pageSize: 1000 })).entries).to.have.length(128);
    const bytesOf = (tag: string) => ops(tag).reduce((n, o) => n + Buffer.byteLength(o.op.value.key) + o.op.value.value.length, 0);
    expect(await ledgerOf("dave-txn")).to.equal(BigInt(bytesOf("alone") + bytesOf("beside") + 6 * 2));
  });

  it("two replicas writing for one principal across 40 resources at once, some under stale tokens: each ledger is the exact sum of what its resources store, and none passes the budget", async () => {
    const principal = "carol-concurrent";
    const carol = await Promise.all(r.servers.map((s) => as(s, principal)));
    const resources = Array.from({ length: 40 }, () => uniqueResource("concurrent"));
    const stale = await Promise.all(
      resources.map(async (r) => {
        const t = await acquire(carol[0], r);
        await carol[0].lease.release({ token: t });
        return t;
      }),
    );
    const tokens = await Promise.all(resources.map((r, i) => acquire(carol[i % 2], r)));
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 6; round++) {
      await Promise.all(
        Array.from({ length: 80 }, async (_, i) => {
          const r = (i * 7 + round) % 40;
          const key = `k${i % 3}`;
          const via = carol[(i + round) % 2].store;
          const mutation = { token: i % 13 === 0 ? stale[r] : tokens[r] };
          const write =
            (i + round) % 6 === 0
              ? via.delete({ resource: resources[r], key, mutation })
              : via.put({ resource: resources[r], key, value: randomBytes(600 + ((i * 131 + round * 17) % 900)), mutation });
          const outcome = await write.then(
            () => "ok",
            (e) => reasonOf(e),
          );
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        }),
      );
    }
    expect([...outcomes.keys()].sort(), JSON.stringify([...outcomes])).to.include.members(["ok", "QUOTA_EXCEEDED", "STALE_TOKEN"]);
    let stored = 0n;
    for (const r of resources) {
      const usage = await usageOf(r);
      let bytes = 0n;
      const page = await carol[0].store.range({ resource: r, pageSize: 100 });
      for (const e of page.entries) bytes += BigInt(Buffer.byteLength(e.key) + e.value.byteLength);
      expect(usage.bytes, `${r}'s usage key`).to.equal(bytes);
      if (bytes > 0n) expect(usage.payer, `${r}'s payer`).to.equal(principalTag(principal));
      stored += bytes;
    }
    expect(await ledgerOf(principal), "the ledger").to.equal(stored);
    expect(stored <= BigInt(BUDGET), `${stored} stored`).to.equal(true);
  });
});
