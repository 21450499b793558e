// etcd killed (SIGKILL) and restarted on the same data and port a few seconds later: renewals work again
// within about a second of etcd's return, like every other call, and a holder renewing every 500 ms
// keeps a lease of 5 s through it (etcd restarts every lease's TTL when it comes back).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { ConnectError } from "@connectrpc/connect";
import { startEmbeddedEtcd, type EmbeddedEtcd } from "../../server/etcd/embedded.js";
import { startServer, type TestServer } from "../harness/server.js";
import { clientsFor } from "../harness/clients.js";
import { sleep } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

interface Attempt {
  sentAt: number;
  doneAt: number;
  error?: string;
}

describe("etcd SIGKILLed and restarted: renewals", function () {
  this.timeout(90_000);
  let dir: string;
  let etcd: EmbeddedEtcd | undefined;
  let server: TestServer | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-etcd-restart-"));
    etcd = await startEmbeddedEtcd({ dataDir: dir });
    // The default etcd timeout (5 s): a renewal must not wait for it to find the stream dead.
    server = await startServer({ etcd: etcd.endpoint });
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a holder with a 5 s TTL renewing every 500 ms keeps its lease, and renewals work within a second of etcd's return", async () => {
    const { lease } = clientsFor(server!.url);
    const { token } = await lease.acquire({ resource: `restart-${process.pid}`, ttl: ttl(5), holder: "A" });
    const leaseId = token!.leaseId;
    const attempts: Attempt[] = [];
    let renewing = true;
    const inFlight: Promise<void>[] = [];
    const renewer = (async () => {
      while (renewing) {
        const a: Attempt = { sentAt: performance.now(), doneAt: 0 };
        attempts.push(a);
        inFlight.push(
          lease.renew({ leaseId }, { timeoutMs: 10_000 }).then(
            () => void (a.doneAt = performance.now()),
            (e) => {
              a.doneAt = performance.now();
              const err = ConnectError.from(e);
              a.error = `${err.code} ${err.message}`;
            },
          ),
        );
        await sleep(500);
      }
    })();

    await sleep(1_500);
    const { clientPort, peerPort } = etcd!;
    const gone = new Promise((r) => etcd!.process.once("exit", r));
    etcd!.process.kill("SIGKILL");
    await gone;
    await sleep(3_000);
    etcd = await startEmbeddedEtcd({ dataDir: dir, clientPort, peerPort });
    const back = performance.now();
    await sleep(6_000);
    renewing = false;
    await renewer;
    await Promise.all(inFlight);

    const t = (ms: number) => `${((ms - back) / 1000).toFixed(2)} s`;
    const report = attempts.map((a) => `sent ${t(a.sentAt)} answered ${t(a.doneAt)}: ${a.error ?? "ok"}`).join("\n");
    // Never told the lease is gone: etcd still held it.
    expect(attempts.filter((a) => a.error?.startsWith(`${5} `)), report).to.deep.equal([]); // 5 = NOT_FOUND
    const firstOk = attempts.find((a) => a.sentAt >= back && !a.error);
    expect(firstOk, `no renewal succeeded after etcd's return\n${report}`).to.not.equal(undefined);
    expect(firstOk!.doneAt - back, `first renewal after etcd's return\n${report}`).to.be.below(1_500);
    const failedDuring = attempts.filter((a) => a.error && a.sentAt < back);
    console.log(
      `      first renewal after etcd's return answered ${t(firstOk!.doneAt)} after it; ` +
        `during the outage ${failedDuring.length} renewals failed, the slowest answered in ${Math.max(...failedDuring.map((a) => a.doneAt - a.sentAt), 0).toFixed(0)} ms`,
    );
    // Every renewal sent from a second after etcd's return on succeeds.
    const failedLater = attempts.filter((a) => a.sentAt >= back + 1_000 && a.error);
    expect(failedLater.map((a) => `sent ${t(a.sentAt)}: ${a.error}`), report).to.deep.equal([]);
    const res = await lease.renew({ leaseId });
    expect(Number(res.ttl!.seconds)).to.be.greaterThan(0);
  });
});
