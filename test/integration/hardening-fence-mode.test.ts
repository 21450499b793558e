// Issue 8, item 1: a misspelled fence mode must not silently downgrade LIVE to ORDER. With the token of
// an expired lease, ORDER accepts a write (nobody newer has written) and LIVE refuses it
// (LEASE_NOT_HELD); a mode the enum does not have, by name or by number, in any protocol, is
// INVALID_ARGUMENT naming mutation.mode and the values allowed, and writes nothing.
import { expect } from "chai";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { PutRequestSchema } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { FencingTokenSchema, FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { sleep, uniqueResource, useServer } from "../harness/suite.js";
import { connectJson, grpcWeb, rawGrpcClient, rawGrpcUnary, type WireStatus } from "../harness/wire.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const PUT = "/fencekeeper.v1.FencedStoreService/Put";

describe("hardening: a fence mode the enum does not have (issue 8, item 1)", () => {
  const s = useServer();
  let client: grpc.Client;
  let resource: string;
  let token: FencingToken;

  before(async function () {
    this.timeout(20_000);
    client = rawGrpcClient(s.server.url);
    // One lease of 2 s, never renewed, written with once and then left to expire.
    resource = uniqueResource("mode");
    token = (await s.lease.acquire({ resource, ttl: ttl(2), holder: "A" })).token!;
    await s.store.put({ resource, key: "k", value: Buffer.from("original"), mutation: { token } });
    await sleep(3000);
    expect((await s.lease.describe({ resource })).held, "the lease should have expired").to.equal(false);
  });
  after(() => client?.close());

  // Each test checks that it wrote nothing: the value, its revision and the fence are as before it.
  let baseline: { value: string; modRevision: bigint; fence: bigint };
  beforeEach(async () => {
    const got = await s.store.get({ resource, key: "k" });
    baseline = { value: Buffer.from(got.value).toString(), modRevision: got.modRevision, fence: got.fence };
  });
  async function expectUnchanged() {
    const got = await s.store.get({ resource, key: "k" });
    expect({ value: Buffer.from(got.value).toString(), modRevision: got.modRevision, fence: got.fence }, "the refused request wrote").to.deep.equal(baseline);
    expect((await s.store.range({ resource })).entries.map((e) => e.key)).to.deep.equal(["k"]);
  }

  const jsonPut = (mode: unknown) => ({
    resource,
    key: "k",
    value: Buffer.from("downgraded").toString("base64"),
    mutation: { token: toJson(FencingTokenSchema, token), mode },
  });

  function expectInvalidMode(st: WireStatus, what: string): Promise<void> {
    expect(Code[st.code] ?? "OK", `${what}: ${st.message}`).to.equal("InvalidArgument");
    expect(st.message, what).to.contain("mutation.mode");
    return expectUnchanged();
  }

  function expectNamesAllowedValues(st: WireStatus, what: string) {
    for (const name of ["FENCE_MODE_ORDER", "FENCE_MODE_LIVE"]) expect(st.message, what).to.contain(name);
  }

  for (const mode of ["FENCE_MODE_LIVEE", "live"]) {
    it(`Connect JSON "mode": ${JSON.stringify(mode)} with an expired lease's token: INVALID_ARGUMENT naming mutation.mode and the allowed values`, async () => {
      const st = await connectJson(s.server.url, PUT, jsonPut(mode));
      await expectInvalidMode(st, mode);
      expectNamesAllowedValues(st, mode);
    });
  }

  it('Connect JSON "mode": "FENCE_MODE_LIVE" with the same token: FAILED_PRECONDITION LEASE_NOT_HELD', async () => {
    const st = await connectJson(s.server.url, PUT, jsonPut("FENCE_MODE_LIVE"));
    expect(Code[st.code] ?? "OK", st.message).to.equal("FailedPrecondition");
    expect(st.infos.map((i) => i.reason)).to.deep.equal(["LEASE_NOT_HELD"]);
    await expectUnchanged();
  });

  it('Connect JSON "mode": 7: INVALID_ARGUMENT naming mutation.mode', async () => {
    const st = await connectJson(s.server.url, PUT, jsonPut(7));
    await expectInvalidMode(st, "7");
    expectNamesAllowedValues(st, "7");
  });

  const binaryPut = () =>
    toBinary(PutRequestSchema, create(PutRequestSchema, { resource, key: "k", value: Buffer.from("downgraded"), mutation: { token, mode: 7 as FenceMode } }));

  it("mode 7 over gRPC (protobuf binary, @grpc/grpc-js): INVALID_ARGUMENT naming mutation.mode", async () => {
    const st = await rawGrpcUnary(client, PUT, binaryPut());
    await expectInvalidMode(st, "gRPC");
    expectNamesAllowedValues(st, "gRPC");
  });

  it("mode 7 over gRPC-Web (HTTP/1.1): INVALID_ARGUMENT naming mutation.mode", async () => {
    const st = await grpcWeb(s.server.url, PUT, binaryPut());
    await expectInvalidMode(st, "gRPC-Web");
    expectNamesAllowedValues(st, "gRPC-Web");
  });

  it("control: FENCE_MODE_ORDER with the same token is accepted, which is what a downgrade would have done", async () => {
    const st = await connectJson(s.server.url, PUT, jsonPut("FENCE_MODE_ORDER"));
    expect(Code[st.code] ?? "OK", st.message).to.equal("OK");
    const got = await s.store.get({ resource, key: "k" });
    expect(Buffer.from(got.value).toString()).to.equal("downgraded");
    expect(Number(got.modRevision)).to.be.greaterThan(Number(baseline.modRevision));
  });
});
