// An Acquire on a lease of its own whose etcd lease expires before the grant is written: the server was
// slower than the TTL between granting the lease and writing the grant (a loaded machine, a slow link to
// etcd). The caller never saw that lease, so it must not hear LEASE_NOT_FOUND about it: the server starts
// over on a fresh lease.
import { expect } from "chai";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource } from "../harness/suite.js";
import { ttl } from "../harness/batching.js";

describe("an Acquire whose own etcd lease expired before its grant was written", () => {
  let etcd: TestEtcd;
  let proxy: DelayProxy;
  let server: TestServer;
  let c: Clients;
  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    proxy = await startDelayProxy(etcd.endpoint);
    server = await startServer({ etcd: proxy.url });
    c = clientsFor(server.url);
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await proxy?.close();
    await etcd?.destroy();
  });

  it("is granted on a fresh lease, not answered LEASE_NOT_FOUND, and holds exactly one generation", async function () {
    this.timeout(60_000);
    const resource = uniqueResource("own-lease-expired");
    // A first acquisition, undelayed: the server's first grant also reads what it reads once (its keys).
    const first = await c.lease.acquire({ resource, ttl: ttl(2), holder: "warm" });
    await c.lease.release({ token: first.token });
    // etcd's answers to the server are held back 4 s, twice the 2 s TTL: the lease the server grants is
    // gone (etcd expires it at its TTL) by the time the server reads that it was granted and writes on it.
    proxy.setDelay(4_000, "toClient");
    const acquiring = c.lease.acquire({ resource, ttl: ttl(2), holder: "slow" });
    // The grant's answer is already on its way, held back; what etcd answers from now on comes at once.
    await sleep(500);
    proxy.setDelay(0);
    const res = await acquiring;
    expect(res.token?.resource).to.equal(resource);
    expect(res.token!.generation > first.token!.generation).to.equal(true);
    const d = await c.lease.describe({ resource });
    expect(d.held, "held after the retry").to.equal(true);
    expect(d.token?.generation).to.equal(res.token?.generation);
    expect(d.token?.leaseId, "on the fresh lease").to.equal(res.token?.leaseId);
    await c.lease.release({ token: res.token });
  });
});
