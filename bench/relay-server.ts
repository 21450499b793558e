// The bare relay of issue 21, target 4: a minimal connect-node server with no fencekeeper code, whose
// FencedStoreService.Put forwards the hand-written peer's etcd transaction (put-peers.ts, ByHand) and
// answers. It is what any gRPC service in front of etcd costs a call: one HTTP/2 request in, one out, two
// protobuf codecs. The latency scenario measures a fenced Put beside it, in the same run.
//   node bench/relay-server.ts --etcd HOST:PORT --prefix P     prints "listening <port>" once it serves
// The resource's generation is taken from the token's generation field; nothing is verified.
import { createServer } from "node:http2";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Etcd3 } from "etcd3";
import { FencedStoreService, PutResponseSchema } from "../gen/ts/fencekeeper/v1/store_pb.js";
import { ByHand } from "./put-peers.js";

const { values } = parseArgs({ options: { etcd: { type: "string" }, prefix: { type: "string", default: "/relay/" } } });
const etcd = new Etcd3({ hosts: values.etcd! });
const byHand = new ByHand(etcd, values.prefix);

const routes = (router: ConnectRouter) =>
  router.service(FencedStoreService, {
    async put(req) {
      const generation = req.mutation?.token?.generation ?? 0n;
      await byHand.write({ resource: req.resource, generation, key: req.key, value: Buffer.from(req.value) });
      return create(PutResponseSchema, {});
    },
  });

const server = createServer(connectNodeAdapter({ routes }));
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  console.log(`listening ${typeof address === "object" && address ? address.port : 0}`);
});
const stop = () => {
  server.close();
  etcd.close();
  setTimeout(() => process.exit(0), 200).unref();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
