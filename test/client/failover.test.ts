// Two server replicas on one etcd: a client keeps its lease through the second when the first one that
// carries its KeepAlive stream is killed, or hangs.
import { expect } from "chai";
import { shownToOthers } from "../harness/clients.js";
import { FencekeeperClient, type ClientEvent } from "../../client/index.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource } from "../harness/suite.js";

describe("client: a server replica fails mid-stream", () => {
  let etcd: TestEtcd;
  let first: TestServer;
  let second: TestServer;
  let fk: FencekeeperClient;
  let events: ClientEvent[];
  before(async () => {
    etcd = await startEtcd();
  });
  after(() => etcd.destroy());
  beforeEach(async () => {
    const prefix = `/fk-failover-${process.pid}-${Date.now()}/`;
    const args = ["--metrics-listen", "off", "--shutdown-grace", "500"];
    [first, second] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix, args }), startServer({ etcd: etcd.endpoint, prefix, args })]);
    events = [];
    // A lease of its own: the per-lease renewals these tests follow (sessions.test.ts: sessions).
    fk = new FencekeeperClient({ servers: [first.url, second.url], sessions: false, onEvent: (e) => events.push(e) });
  });
  afterEach(async () => {
    await fk.close();
    await Promise.all([first.stop("SIGKILL"), second.stop("SIGKILL")]);
  });

  const ttl = 2000;
  const renewedSince = (t: number) => events.filter((e) => e.type === "renewed" && e.confirmedAt.getTime() >= t).length;

  async function holdThrough(failure: () => void): Promise<void> {
    const resource = uniqueResource("failover");
    const lease = await fk.acquire(resource, { ttl });
    await sleep(ttl / 2); // the stream to the first replica is open and renewing
    expect(events.some((e) => e.type === "stream-opened" && e.url === first.url)).to.equal(true);
    const failedAt = Date.now();
    failure();
    await sleep(ttl * 2); // twice the TTL: the lease lives only if renewals go on through the second replica
    expect(lease.held, "the lease is still held").to.equal(true);
    expect(events.some((e) => e.type === "lost")).to.equal(false);
    expect(events.some((e) => e.type === "stream-failed" && e.url === first.url)).to.equal(true);
    expect(events.some((e) => e.type === "stream-opened" && e.url === second.url)).to.equal(true);
    expect(renewedSince(failedAt)).to.be.at.least(4);
    const seen = new FencekeeperClient({ servers: second.url });
    try {
      const d = await seen.describe(resource);
      expect(d.held).to.equal(true);
      expect(shownToOthers(d.token!)).to.deep.equal(shownToOthers(lease.token));
    } finally {
      await seen.close();
    }
    const put = await lease.put("k", "v");
    expect(put.fence).to.equal(lease.token.generation);
  }

  it("the replica is killed (SIGKILL): the stream reconnects to the other replica and the lease lives on", async () => {
    await holdThrough(() => first.process.kill("SIGKILL"));
  });

  it("the replica hangs (SIGSTOP): an unanswered renewal moves the stream to the other replica in time", async () => {
    await holdThrough(() => first.process.kill("SIGSTOP"));
  });
});
