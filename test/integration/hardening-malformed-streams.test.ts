// Issue 8, item 3: "malformed protobuf over gRPC or gRPC-Web: INTERNAL "parse binary"; should be
// INVALID_ARGUMENT." Put is fixed (test/integration/hardening-retryable.test.ts); these are the
// requests the unary fast path leaves to connect: the streaming methods (Observe, KeepAlive) over gRPC
// and gRPC-Web, and a unary Put in Connect's binary format compressed with br. Garbage is the caller's
// fault, not the server's, and must not be answered INTERNAL.
import { brotliCompressSync } from "node:zlib";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { useServer } from "../harness/suite.js";
import { connectUnary, grpcWeb, rawGrpcBidi, rawGrpcClient, rawGrpcServerStream, type WireStatus } from "../harness/wire.js";

const garbage = [
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]), // a tag whose varint never ends
  Buffer.from([0x0a, 0x05, 0x61]), // field 1, 5 bytes announced, 1 sent
  Buffer.from([0x0f, 0x01]), // wire type 7 does not exist
];
const OBSERVE = "/fencekeeper.v1.LeaseService/Observe";
const KEEPALIVE = "/fencekeeper.v1.LeaseService/KeepAlive";
const PUT = "/fencekeeper.v1.FencedStoreService/Put";

describe("hardening: malformed protobuf on the paths connect serves is INVALID_ARGUMENT (issue 8, item 3)", () => {
  const s = useServer();
  let client: grpc.Client;
  before(() => (client = rawGrpcClient(s.server.url)));
  after(() => client?.close());

  const expectInvalid = (st: WireStatus, what: string) => expect(Code[st.code] ?? "OK", `${what}: ${st.message}`).to.equal("InvalidArgument");

  it("garbage as the request of Observe over gRPC (@grpc/grpc-js): INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const g of garbage) expectInvalid(await rawGrpcServerStream(client, OBSERVE, g), g.toString("hex"));
  });

  it("garbage as a message of KeepAlive over gRPC (@grpc/grpc-js): INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const g of garbage) expectInvalid(await rawGrpcBidi(client, KEEPALIVE, [g]), g.toString("hex"));
  });

  it("garbage as the request of Observe over gRPC-Web (HTTP/1.1): INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const g of garbage) expectInvalid(await grpcWeb(s.server.url, OBSERVE, g), g.toString("hex"));
  });

  it("garbage as a Put in Connect's binary format compressed with br: INVALID_ARGUMENT, not INTERNAL", async () => {
    for (const g of garbage) {
      const st = await connectUnary(s.server.url, PUT, brotliCompressSync(g), { "content-type": "application/proto", "content-encoding": "br" });
      expectInvalid(st, g.toString("hex"));
    }
  });
});
