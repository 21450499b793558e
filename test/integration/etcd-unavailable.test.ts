// etcd unreachable: UNAVAILABLE (retryable), never a wrong answer; service resumes when etcd is back.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { useServer, uniqueResource, eventually } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("etcd unreachable", () => {
  const s = useServer(["--etcd-timeout", "1000"]);

  it("answers UNAVAILABLE with reason ETCD_UNAVAILABLE while etcd is down, and serves again once it is back", async function () {
    this.timeout(60_000);
    const resource = uniqueResource("outage");
    const { token } = await s.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
    await s.store.put({ resource, key: "k", value: Buffer.from("before"), mutation: { token } });

    await s.etcd.stop();
    try {
      const calls = [
        () => s.store.put({ resource, key: "k", value: Buffer.from("during"), mutation: { token } }),
        () => s.store.get({ resource, key: "k" }),
        () => s.lease.acquire({ resource: uniqueResource("outage-new"), ttl: ttl(5) }),
        () => s.lease.renew({ leaseId: token!.leaseId }),
      ];
      for (const call of calls) {
        const started = Date.now();
        const err = await call().then(
          () => undefined,
          (e) => ConnectError.from(e),
        );
        expect(err, "a call succeeded with etcd down").to.not.equal(undefined);
        expect(err!.code, err!.message).to.equal(Code.Unavailable);
        expect(err!.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("ETCD_UNAVAILABLE");
        expect(Date.now() - started).to.be.below(5000);
      }
    } finally {
      await s.etcd.start();
    }

    // The lease outlived the outage (its TTL is 30 s) and the write made during it was not applied.
    await eventually(async () => {
      try {
        await s.lease.renew({ leaseId: token!.leaseId });
        return true;
      } catch {
        return false;
      }
    }, "renewal works again", 20_000);
    const got = await s.store.get({ resource, key: "k" });
    expect(Buffer.from(got.value).toString()).to.equal("before");
    await s.store.put({ resource, key: "k", value: Buffer.from("after"), mutation: { token } });
  });
});
