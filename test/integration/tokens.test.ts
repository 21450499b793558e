// The token rules: renewal keeps the generation, every new acquisition gets a greater one.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { useServer, uniqueResource, sleep } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("fencing tokens", () => {
  const s = useServer();

  it("acquire returns a token for the resource, and renewal keeps it", async () => {
    const resource = uniqueResource("renew");
    const a = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    expect(a.token!.resource).to.equal(resource);
    expect(a.token!.generation > 0n).to.equal(true);
    expect(Number(a.ttl!.seconds)).to.be.within(4, 5);
    const renewed = await s.lease.renew({ leaseId: a.token!.leaseId });
    expect(Number(renewed.ttl!.seconds)).to.be.within(4, 5);
    const d = await s.lease.describe({ resource });
    expect(d.held).to.equal(true);
    expect(d.holder).to.equal("A");
    expect(d.token).to.deep.include({ generation: a.token!.generation, leaseId: a.token!.leaseId });
  });

  it("release and reacquire by the same holder gives a greater generation", async () => {
    const resource = uniqueResource("reacquire");
    const first = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    await s.lease.release({ token: first.token });
    const second = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    expect(second.token!.generation > first.token!.generation).to.equal(true);
  });

  it("expiry and reacquire gives a greater generation, and the old lease is NOT_FOUND", async () => {
    const resource = uniqueResource("expire");
    const first = await s.lease.acquire({ resource, ttl: ttl(2), holder: "A" });
    await sleep(3200);
    const err = await s.lease.renew({ leaseId: first.token!.leaseId }).catch((e) => e);
    expect(err).to.be.instanceOf(ConnectError);
    expect((err as ConnectError).code).to.equal(Code.NotFound);
    const second = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    expect(second.token!.generation > first.token!.generation).to.equal(true);
  });
});
