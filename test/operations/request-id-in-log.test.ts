// At debug level, the ownership log's lines (granted, released: server/observability/ownership-log.ts)
// carry the request id of the call that made them, the caller's x-request-id when it sent one, whichever
// way the call came in (the unary fast path, or connect-node with it off).
import { expect } from "chai";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { clientsFor } from "../harness/clients.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";

describe("the ownership log names the call's request id", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;

  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.destroy();
  });

  const lines = (server: TestServer) =>
    server.logs.flatMap((l) => {
      try {
        return [JSON.parse(l) as { msg: string; requestId?: string; resource?: string }];
      } catch {
        return [];
      }
    });

  for (const fastPath of ["on", "off"]) {
    it(`with the unary fast path ${fastPath}`, async () => {
      const server = await startServer({ etcd: etcd.endpoint, args: ["--log-level", "debug", "--unary-fast-path", fastPath] });
      try {
        const c = clientsFor(server.url);
        const resource = uniqueResource("request-id");
        const { token } = await c.lease.acquire({ resource, ttl: { seconds: 10n, nanos: 0 } }, { headers: { "x-request-id": `acquire-${fastPath}` } });
        await c.lease.release({ token }, { headers: { "x-request-id": `release-${fastPath}` } });
        await eventually(() => lines(server).some((l) => l.msg === "released" && l.resource === resource), "the released line");
        const mine = lines(server).filter((l) => (l.msg === "granted" || l.msg === "released") && l.resource === resource);
        expect(mine.map((l) => `${l.msg} ${l.requestId}`)).to.deep.equal([`granted acquire-${fastPath}`, `released release-${fastPath}`]);
      } finally {
        await server.stop();
      }
    });
  }
});
