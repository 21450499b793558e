// A waiting acquire cancelled at the moment its turn comes must not leave the grant held
// (docs/client-semantics.md, "Acquire"): the holder releases while the waiters behind it are cancelled,
// round after round, and the resource is free again within a second each time. Through the Python
// library's probe (cancel_race.py), against a real etcd and server, on sessions: there the library can
// find a grant whose answer it never got (the session's id is its lease). A waiter on a lease of its
// own whose answer was on its way as it was cancelled cannot be found by the client: that grant ends
// at its TTL (the docs say so), and this test does not run that case.
import { expect } from "chai";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { runCancelRace as pythonCancelRace } from "./python-probe.js";

describe("a waiting acquire cancelled as it is granted leaves nothing held", function () {
  this.timeout(120_000);
  let etcd: TestEtcd;
  let server: TestServer;

  before(async () => {
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: ["--metrics-listen", "off", "--shutdown-grace", "500"] });
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });

  for (const sessions of [true]) {
    it(`Python${sessions ? ", on sessions" : ""}: 60 rounds of 4 waiters cancelled as the holder releases`, async () => {
      const r = await pythonCancelRace(server.url, uniqueResource("cancel-race-py"), { rounds: 60, waiters: 4, sessions });
      expect(r.code, r.output).to.equal(0);
    });
  }
});
