// A waiting acquire cancelled at the moment its turn comes must not leave the grant held
// (docs/client-semantics.md, "Acquire"): the holder releases while the waiters behind it are cancelled,
// round after round, and the resource is free again within a second each time. Through the Python
// library's probe (cancel_race.py), against a real etcd and server, on sessions: there the library can
// find a grant whose answer it never got (the session's id is its lease). A waiter on a lease of its
// own whose answer was on its way as it was cancelled cannot be found by the client: that grant ends
// at its TTL (the docs say so), and this test does not run that case.
import { expect } from "chai";
import { CanceledError, FencekeeperClient, type Lease } from "../../client/index.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource } from "../harness/suite.js";
import { runCancelRace as goCancelRace } from "./go-probe.js";
import { runCancelRace as javaCancelRace } from "./java-probe.js";
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
    it(`Python${sessions ? ", on sessions" : ""}: 25 rounds of 4 waiters cancelled as the holder releases`, async () => {
      const r = await pythonCancelRace(server.url, uniqueResource("cancel-race-py"), { rounds: 25, waiters: 4, sessions });
      expect(r.code, r.output).to.equal(0);
    });
  }

  it("Go, on sessions: 25 rounds of 4 waiters cancelled as the holder releases", async () => {
    const r = await goCancelRace(server.url, uniqueResource("cancel-race-go"), { rounds: 25, waiters: 4, sessions: true });
    expect(r.code, r.output).to.equal(0);
  });

  it("Java, on sessions: 25 rounds of 4 waiters cancelled as the holder releases", async () => {
    const r = await javaCancelRace(server.url, uniqueResource("cancel-race-java"), { rounds: 25, waiters: 4, sessions: true });
    expect(r.code, r.output).to.equal(0);
  });

  it("TypeScript, on sessions: 25 rounds of 4 waiters cancelled as the holder releases", async () => {
    const resource = uniqueResource("cancel-race-ts");
    const waiters = 4;
    const rounds = 25;
    // A client each: a session takes a resource once at a time (cancel_race.py says more).
    const clients = Array.from({ length: waiters + 1 }, () => new FencekeeperClient({ servers: server.url, sessions: true }));
    const [first, ...rest] = clients;
    let granted = 0;
    try {
      for (let round = 0; round < rounds; round++) {
        const holder = await first.acquire(resource, { ttl: 10_000, wait: 10_000, holder: "holder" });
        const cancels = rest.map(() => new AbortController());
        const waiting = rest.map((c, i) =>
          c.acquire(resource, { ttl: 10_000, wait: true, signal: cancels[i].signal, holder: `waiter-${round}-${i}` }).then(
            (lease): Lease | undefined => lease,
            (err) => {
              if (err instanceof CanceledError) return undefined;
              throw err;
            },
          ),
        );
        for (let t = 0; (await first.describe(resource)).waiters < waiters; t++) {
          if (t > 500) throw new Error(`round ${round}: the waiters never all stood in line`);
          await sleep(10);
        }
        const releasing = holder.release();
        await sleep((round % 10) * 2);
        for (const c of cancels) c.abort();
        await releasing;
        for (const lease of await Promise.all(waiting)) {
          if (lease) {
            granted++;
            await lease.release();
          }
        }
        const freeBy = Date.now() + 1000;
        for (;;) {
          const d = await first.describe(resource);
          if (!d.held) break;
          expect(Date.now(), `round ${round}: ${d.holder} (generation ${d.token?.generation}) still holds "${resource}"`).to.be.below(freeBy);
          await sleep(20);
        }
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
    expect(granted).to.be.below(rounds * waiters);
  });
});
