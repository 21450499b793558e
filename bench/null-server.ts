// The floor of a unary call on this machine: a server with no fencekeeper code and no etcd that answers
// FencedStoreService.Put and LeaseService.Renew at once with an empty answer. Two of them:
//   --kind grpc-js   @grpc/grpc-js's Server, a handler registered for the method (what a gRPC service in
//                    Node costs a call with the library fencekeeper's server is compared with)
//   --kind http2     node:http2 alone: the gRPC framing written by hand (one 5-byte-prefixed empty
//                    message, grpc-status 0 in the trailers), no gRPC library at all
//   node bench/null-server.ts --kind grpc-js|http2      prints "listening <port>" once it serves
import * as grpc from "@grpc/grpc-js";
import { constants, createServer } from "node:http2";
import { parseArgs } from "node:util";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";

/** The methods answered (floor.ts calls Put, lock-cpu.ts Renew): each path to its name in grpc-js's service definition. */
const METHODS = { put: `/${FencedStoreService.typeName}/${FencedStoreService.method.put.name}`, renew: `/${LeaseService.typeName}/${LeaseService.method.renew.name}` };
const PATHS = new Set(Object.values(METHODS));
const { values } = parseArgs({ options: { kind: { type: "string" } } });
const EMPTY = Buffer.alloc(0);
/** A gRPC message frame of an empty message: not compressed, length 0. */
const EMPTY_FRAME = Buffer.from([0, 0, 0, 0, 0]);

let stop: () => void;
if (values.kind === "grpc-js") {
  const server = new grpc.Server();
  const raw = (path: string) => ({
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  });
  const answer = (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => callback(null, EMPTY);
  server.addService(
    Object.fromEntries(Object.entries(METHODS).map(([name, path]) => [name, raw(path)])),
    Object.fromEntries(Object.keys(METHODS).map((name) => [name, answer])),
  );
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    console.log(`listening ${port}`);
  });
  stop = () => server.forceShutdown();
} else if (values.kind === "http2") {
  const server = createServer();
  server.on("stream", (stream, headers) => {
    stream.on("data", () => undefined);
    stream.on("end", () => {
      if (!PATHS.has(String(headers[constants.HTTP2_HEADER_PATH]))) {
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, { endStream: true });
        return;
      }
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(EMPTY_FRAME);
    });
  });
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    console.log(`listening ${typeof address === "object" && address ? address.port : 0}`);
  });
  stop = () => server.close();
} else {
  console.error(`null-server: --kind grpc-js or --kind http2, not "${values.kind}"`);
  process.exit(2);
}
const exit = () => {
  stop();
  setTimeout(() => process.exit(0), 200).unref();
};
process.on("SIGTERM", exit);
process.on("SIGINT", exit);
