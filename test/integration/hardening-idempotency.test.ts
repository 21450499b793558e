// Issue 8, item 7: idempotency keys. (a) Keys are global: the same key on two resources is one logical
// request sent twice with different contents, so the second is refused (IDEMPOTENCY_KEY_REUSED) and
// applies nothing; it used to apply twice. (b) Records live on a lease that the server shares between
// them; when that lease is gone, the next keyed mutation used to fail once with UNAVAILABLE. It must
// succeed, and its retry must be answered from its record.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { Etcd3 } from "etcd3";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { failure, uniqueResource, useServer } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("hardening: idempotency keys are global and survive the loss of their lease (issue 8, item 7)", function () {
  this.timeout(30_000);
  const s = useServer();
  let etcd: Etcd3;
  before(() => {
    etcd = new Etcd3({ hosts: s.etcd.endpoint });
  });
  after(() => etcd?.close());

  const acquire = async (name: string) => (await s.lease.acquire({ resource: uniqueResource(name), ttl: ttl(60) })).token!;

  /** The idempotency records in etcd (under the server's prefix + "i/"), with the leases they are on. */
  async function records(): Promise<{ key: string; lease: string }[]> {
    const all = await etcd.kv.range({ key: Buffer.from("\0"), range_end: Buffer.from("\0") });
    return all.kvs.map((kv) => ({ key: kv.key.toString(), lease: kv.lease })).filter((r) => /\/i\/[0-9a-f]{64}$/.test(r.key));
  }

  /** Revokes the lease(s) that carry the idempotency records, as an operator or etcd could lose them. */
  async function revokeRecordLeases(): Promise<void> {
    const found = await records();
    expect(found.length, "an idempotency record in etcd").to.be.greaterThan(0);
    const leases = [...new Set(found.map((r) => r.lease))];
    expect(leases, "idempotency records live on a lease").to.not.include("0");
    for (const ID of leases) await etcd.leaseClient.leaseRevoke({ ID });
    expect(await records()).to.deep.equal([]);
  }

  it("(a) the same idempotency_key on R1 and then on R2, each with its own token: the second is IDEMPOTENCY_KEY_REUSED and applies nothing; the retry on R1 is replayed", async () => {
    const t1 = await acquire("idem-r1");
    const t2 = await acquire("idem-r2");
    const idempotencyKey = `key-${uniqueResource("idem")}`;
    const put = (token: typeof t1) =>
      s.store.put({ resource: token.resource, key: "k", value: Buffer.from("v"), mutation: { token, idempotencyKey } });

    const first = await put(t1);
    expect(first.commit!.replayed).to.equal(false);

    const err = await failure(put(t2));
    expect(Code[err.code], err.message).to.equal("InvalidArgument");
    expect(err.findDetails(ErrorInfoSchema).map((i) => i.reason)).to.deep.equal(["IDEMPOTENCY_KEY_REUSED"]);
    expect((await s.store.get({ resource: t2.resource, key: "k" })).found, "the request on R2 wrote").to.equal(false);
    expect(await s.store.getFence({ resource: t2.resource })).to.deep.include({ fence: 0n });

    const again = await put(t1);
    expect(again.commit).to.deep.include({ replayed: true, revision: first.commit!.revision, fence: first.commit!.fence });
    // Still refused on R2, however often it is sent.
    expect((await failure(put(t2))).code).to.equal(Code.InvalidArgument);
  });

  it("(b) the lease carrying the idempotency records is revoked: the next keyed mutation succeeds, and its retry is replayed", async () => {
    const t = await acquire("idem-lease");
    const put = (key: string, idempotencyKey: string) =>
      s.store.put({ resource: t.resource, key, value: Buffer.from(key), mutation: { token: t, idempotencyKey } });
    await put("before", `before-${t.resource}`);
    await revokeRecordLeases();

    const first = await put("after", `after-${t.resource}`).catch((e) => {
      const err = ConnectError.from(e);
      throw new Error(`the first keyed mutation after the lease was revoked failed: ${Code[err.code]} ${err.rawMessage}`);
    });
    expect(first.commit!.replayed).to.equal(false);
    const retry = await put("after", `after-${t.resource}`);
    expect(retry.commit).to.deep.include({ replayed: true, revision: first.commit!.revision });
    expect((await records()).length).to.be.greaterThan(0);
  });

  it("(b) the same with 10 keyed mutations at once after the revocation: every one succeeds, and every retry is replayed", async () => {
    const t = await acquire("idem-burst");
    const put = (i: number) =>
      s.store.put({ resource: t.resource, key: `k${i}`, value: Buffer.from(`v${i}`), mutation: { token: t, idempotencyKey: `burst-${t.resource}-${i}` } });
    await put(-1);
    await revokeRecordLeases();

    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        put(i).then(
          (r) => r.commit!,
          (e) => `${Code[ConnectError.from(e).code]}: ${ConnectError.from(e).rawMessage}`,
        ),
      ),
    );
    expect(outcomes.filter((o) => typeof o === "string"), "keyed mutations that failed after the revocation").to.deep.equal([]);
    const retries = await Promise.all(Array.from({ length: 10 }, (_, i) => put(i)));
    retries.forEach((r, i) => expect(r.commit, `retry ${i}`).to.deep.include({ replayed: true, revision: (outcomes[i] as { revision: bigint }).revision }));
  });
});
