// A null gRPC server on grpc-js: LeaseService.Renew answered at once with a fixed TTL, no etcd, no
// fencekeeper code. The floor of a unary call's server CPU on the stack the etcd client uses too:
// lock-cpu.ts measures fencekeeper's Renew beside it, in the same run.
//   node --import tsx bench/null-grpc-server.ts     prints "listening <port>" once it serves
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { LeaseService, RenewRequestSchema, RenewResponseSchema } from "../gen/ts/fencekeeper/v1/lease_pb.js";

const answer = Buffer.from(toBinary(RenewResponseSchema, create(RenewResponseSchema, { ttl: { seconds: 10n, nanos: 0 } })));
const server = new grpc.Server();
server.addService(
  {
    renew: {
      path: `/${LeaseService.typeName}/Renew`,
      requestStream: false,
      responseStream: false,
      requestDeserialize: (b: Buffer) => fromBinary(RenewRequestSchema, b),
      requestSerialize: (r: unknown) => Buffer.from(r as Uint8Array),
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    },
  },
  { renew: (_call: grpc.ServerUnaryCall<unknown, Buffer>, done: grpc.sendUnaryData<Buffer>) => done(null, answer) },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(`listening ${port}`);
});
const stop = () => server.tryShutdown(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
