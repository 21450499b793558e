// Issue 8, item 1, in every protocol: "An unknown enum name or number is INVALID_ARGUMENT, naming the
// field and the allowed values, in every protocol." The JSON requests that the unary fast path leaves to
// connect (gRPC and gRPC-Web with JSON messages, Connect JSON compressed with br) must be judged as
// strictly as plain Connect JSON: a misspelled FENCE_MODE_LIVE with an expired lease's token must not be
// read as unset, which means ORDER, and accepted.
import { brotliCompressSync } from "node:zlib";
import { expect } from "chai";
import { toJson } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { FencingTokenSchema, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { sleep, uniqueResource, useServer } from "../harness/suite.js";
import { connectUnary, grpcH2, grpcWeb, type WireStatus } from "../harness/wire.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const PUT = "/fencekeeper.v1.FencedStoreService/Put";

describe("hardening: a fence mode the enum does not have, in every protocol that carries JSON (issue 8, item 1)", () => {
  const s = useServer();
  let resource: string;
  let token: FencingToken;

  before(async function () {
    this.timeout(20_000);
    resource = uniqueResource("mode");
    token = (await s.lease.acquire({ resource, ttl: ttl(2), holder: "A" })).token!;
    await s.store.put({ resource, key: "k", value: Buffer.from("original"), mutation: { token } });
    await sleep(3000);
    expect((await s.lease.describe({ resource })).held, "the lease should have expired").to.equal(false);
  });

  let baseline: { value: string; modRevision: bigint };
  beforeEach(async () => {
    const got = await s.store.get({ resource, key: "k" });
    baseline = { value: Buffer.from(got.value).toString(), modRevision: got.modRevision };
  });

  const body = (mode: string) =>
    Buffer.from(
      JSON.stringify({
        resource,
        key: "k",
        value: Buffer.from("downgraded").toString("base64"),
        mutation: { token: toJson(FencingTokenSchema, token), mode },
      }),
    );

  async function expectRefused(st: WireStatus, what: string) {
    expect(Code[st.code] ?? "OK", `${what}: ${st.message}`).to.equal("InvalidArgument");
    expect(st.message, what).to.contain("mutation.mode");
    const got = await s.store.get({ resource, key: "k" });
    expect({ value: Buffer.from(got.value).toString(), modRevision: got.modRevision }, `${what} wrote`).to.deep.equal(baseline);
  }

  for (const mode of ["FENCE_MODE_LIVEE", "live"]) {
    it(`gRPC-Web with JSON messages (application/grpc-web+json, HTTP/1.1), "mode": ${JSON.stringify(mode)}: INVALID_ARGUMENT`, async () => {
      await expectRefused(await grpcWeb(s.server.url, PUT, body(mode), "application/grpc-web+json"), "gRPC-Web JSON");
    });

    it(`gRPC with JSON messages (application/grpc+json, HTTP/2), "mode": ${JSON.stringify(mode)}: INVALID_ARGUMENT`, async () => {
      await expectRefused(await grpcH2(s.server.url, PUT, body(mode), "application/grpc+json"), "gRPC JSON");
    });

    it(`Connect JSON compressed with br (content-encoding: br), "mode": ${JSON.stringify(mode)}: INVALID_ARGUMENT`, async () => {
      const st = await connectUnary(s.server.url, PUT, brotliCompressSync(body(mode)), { "content-type": "application/json", "content-encoding": "br" });
      await expectRefused(st, "Connect JSON br");
    });
  }
});
