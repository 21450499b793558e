// An etcd whose answer to a call ends in RST_STREAM(NO_ERROR) without a gRPC status (what etcd does to
// calls in flight as it shuts down): the call's outcome is unknown, so it answers UNAVAILABLE, never INTERNAL.
import http2 from "node:http2";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { startServer } from "../harness/server.js";
import { clientsFor } from "../harness/clients.js";
import { failureOf } from "../harness/batching.js";

describe("etcd resetting a call in flight", function () {
  this.timeout(30_000);
  it("a Put whose etcd request ends in RST_STREAM(NO_ERROR) answers UNAVAILABLE (ETCD_UNAVAILABLE)", async () => {
    const fake = http2.createServer();
    fake.on("stream", (stream) => {
      stream.on("data", () => undefined);
      stream.on("end", () => {
        stream.respond({ ":status": 200, "content-type": "application/grpc" });
        stream.close(http2.constants.NGHTTP2_NO_ERROR);
      });
    });
    await new Promise<void>((r) => fake.listen(0, "127.0.0.1", r));
    const port = (fake.address() as { port: number }).port;
    const server = await startServer({ etcd: `http://127.0.0.1:${port}`, args: ["--etcd-timeout", "1000"] });
    try {
      const { store } = clientsFor(server.url);
      const err = await store
        .put({ resource: "r", key: "k", value: Buffer.from("v"), mutation: { token: { resource: "r", generation: 5n, leaseId: 7n } } })
        .then(() => undefined, failureOf);
      expect(err, "the Put succeeded").to.not.equal(undefined);
      expect(`${err!.codeName} ${err!.reason} ${err!.message}`).to.match(/^Unavailable ETCD_UNAVAILABLE /);
    } finally {
      await server.stop();
      fake.close();
    }
  });
});
