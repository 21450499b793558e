// The per-resource quota (--max-bytes-per-resource) without a read per write: a replica that knows a
// resource's usage key builds each write on what its own commits left there (server/etcd/committer.ts),
// takes entries it does not know as absent, and keeps several requests of one resource in flight, each
// compared on what the one before will leave. These tests drive what could go wrong with that through two
// replicas on one prefix: the usage must stay the exact sum of what is stored, and an entry another
// replica wrote must count for what it is, even at the quota's edge.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { uniqueResource, useReplicas } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const KiB = 1024;
const LIMIT = 256 * KiB;
const reasonOf = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0]?.reason ?? String(err);

describe("the quota from what the replica knows (--max-bytes-per-resource 256 KiB, two replicas)", function () {
  this.timeout(120_000);
  const r = useReplicas(2, ["--max-bytes-per-resource", String(LIMIT)]);
  let c: Clients[] = [];
  before(() => (c = r.servers.map((s) => clientsFor(s.url))));

  /** The usage key as etcd holds it, and the bytes (keys and values) the resource's entries take. */
  async function usageAndStored(resource: string): Promise<{ usage: number; stored: number }> {
    const usage = Number((await r.direct.get(r.layout.usageKey(resource).toString()).string()) ?? "0");
    let stored = 0;
    let pageToken = "";
    do {
      const page = await c[0].store.range({ resource, pageToken, pageSize: 500 });
      for (const e of page.entries) stored += Buffer.byteLength(e.key) + e.value.byteLength;
      pageToken = page.nextPageToken;
    } while (pageToken);
    return { usage, stored };
  }

  it("many concurrent puts, overwrites of other sizes and deletes through both replicas, some under a stale token: the usage is the exact sum of what is stored", async () => {
    const resource = uniqueResource("quota-known");
    const stale = (await c[0].lease.acquire({ resource, ttl: ttl(60) })).token!;
    await c[0].lease.release({ token: stale });
    const token = (await c[1].lease.acquire({ resource, ttl: ttl(60) })).token!;
    const outcomes = new Map<string, number>();
    let n = 0;
    // Rounds of 48 writes at once over 24 keys, so that writes of one key and of one usage key overlap.
    for (let round = 0; round < 12; round++) {
      await Promise.all(
        Array.from({ length: 48 }, async (_, i) => {
          const key = `k${(i * 7 + round) % 24}`;
          const via = c[(i + round) % 2].store;
          const mutation = { token: i % 11 === 0 ? stale : token };
          const size = 16 + ((i * 131 + round * 17) % 900);
          const write = (i + round) % 5 === 0 ? via.delete({ resource, key, mutation }) : via.put({ resource, key, value: randomBytes(size), mutation });
          const outcome = await write.then(
            () => "ok",
            (e) => reasonOf(e),
          );
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          n++;
        }),
      );
    }
    expect(n).to.equal(12 * 48);
    expect([...outcomes.keys()].sort(), JSON.stringify([...outcomes])).to.deep.equal(["STALE_TOKEN", "ok"]);
    const { usage, stored } = await usageAndStored(resource);
    expect(stored).to.be.greaterThan(0);
    expect(usage, "the usage key against the entries stored").to.equal(stored);
  });

  it("an overwrite, through the other replica, of an entry it never saw counts for the difference: at the quota's edge a same-size overwrite commits, a larger one is refused", async () => {
    const resource = uniqueResource("quota-edge");
    const token = (await c[0].lease.acquire({ resource, ttl: ttl(60) })).token!;
    const big = 60 * KiB;
    // Replica 0 fills the resource to within a few KiB of the quota: four entries of 60 KiB and one of 15.
    for (const key of ["a", "b", "c", "d"]) await c[0].store.put({ resource, key, value: randomBytes(big), mutation: { token } });
    await c[0].store.put({ resource, key: "e", value: randomBytes(15 * KiB), mutation: { token } });
    // Replica 1 learns the resource's usage by a small write of its own; it has never seen entry "a".
    await c[1].store.put({ resource, key: "z", value: randomBytes(16), mutation: { token } });
    const before = await usageAndStored(resource);
    expect(before.usage).to.equal(before.stored);
    expect(LIMIT - before.usage, "room left").to.be.lessThan(big);
    // Taken as absent, "a" would add 60 KiB and be refused; it replaces 60 KiB with 60 KiB.
    await c[1].store.put({ resource, key: "a", value: randomBytes(big), mutation: { token } });
    const grown = await c[1].store.put({ resource, key: "b", value: randomBytes(big + 8 * KiB), mutation: { token } }).then(
      () => "ok",
      (e) => reasonOf(e),
    );
    expect(grown).to.equal("QUOTA_EXCEEDED");
    const after = await usageAndStored(resource);
    expect(after.usage).to.equal(after.stored);
    expect(after.usage).to.equal(before.usage);
  });
});
