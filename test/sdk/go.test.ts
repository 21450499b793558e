// The Go client library (sdk/go) against real etcd and servers, through its test program
// (sdk/go/cmd/fk-sdk-probe): the conformance scenario; a Go holder really paused (SIGSTOP) past its TTL
// while another takes over; renewal answers held back past the deadline; the replica it uses killed.
import { expect } from "chai";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FencekeeperClient } from "../../client/index.js";
import { clientsFor } from "../harness/clients.js";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource } from "../harness/suite.js";
import { makeCerts } from "../mesh/support/certs.js";
import { assertProbeBuilt, GoHolder, runScenario } from "./go-probe.js";

describe("Go client library (sdk/go)", function () {
  this.timeout(60_000);
  const ttl = 2000;
  const args = ["--metrics-listen", "off", "--shutdown-grace", "500"];
  let etcd: TestEtcd;
  let server: TestServer;
  let holder: GoHolder | undefined;
  before(async () => {
    assertProbeBuilt();
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args });
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });
  afterEach(async () => {
    await holder?.kill();
    holder = undefined;
  });

  it("runs the conformance scenario through the library: without credentials, with a client certificate (mutual TLS), with a bearer JWT", async () => {
    // The three runs spend most of their time waiting (the lease kept over three TTLs): they run at once.
    const plain = runScenario([server.url], uniqueResource("go-sdk-scenario"));
    const certs = makeCerts();
    const servers: TestServer[] = [];
    try {
      const { publicKey, privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
      writeFileSync(join(certs.dir, "jwt-public.pem"), await exportSPKI(publicKey));
      const issuer = "https://issuer.fencekeeper.test";
      const bearer = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA" }).setSubject("go-sdk").setIssuer(issuer).setAudience("fencekeeper").setExpirationTime("10m").sign(privateKey);
      const [mtls, jwt] = await Promise.all([
        startServer({ etcd: etcd.endpoint, args: [...args, "--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] }),
        startServer({ etcd: etcd.endpoint, args: [...args, "--jwt-keys", join(certs.dir, "jwt-public.pem"), "--jwt-issuer", issuer, "--jwt-audience", "fencekeeper"] }),
      ]);
      servers.push(mtls, jwt);
      const [withoutCredentials, withCertificate, withBearer, anonymous] = await Promise.all([
        plain,
        runScenario([mtls.url], uniqueResource("go-sdk-mtls"), { "tls-ca": certs.ca, "tls-cert": certs.clientCert, "tls-key": certs.clientKey }),
        runScenario([jwt.url], uniqueResource("go-sdk-jwt"), { bearer }),
        runScenario([jwt.url], uniqueResource("go-sdk-anonymous")),
      ]);
      for (const r of [withoutCredentials, withCertificate, withBearer]) {
        expect(r.code, `${r.stdout}\n${r.stderr}`).to.equal(0);
        expect(r.stdout).to.match(/^ok clean up$/m);
        expect(r.stdout).to.match(/^ok batch: two commits/m);
      }
      // Without the credentials the server requires, refused.
      expect(anonymous.code).to.equal(1);
      expect(anonymous.stderr).to.match(/Unauthenticated UNAUTHENTICATED/);
    } finally {
      await plain.catch(() => undefined);
      await Promise.all(servers.map((s) => s.stop()));
      certs.remove();
    }
  });

  it("AcquireOptions.LockDelay reaches the server, on a lease of its own also with Options.Sessions; Release leaves no delay", async () => {
    const resource = uniqueResource("go-sdk-lock-delay");
    holder = new GoHolder([server.url], resource, ttl, { sessions: true, lockDelayMs: 3000 });
    await holder.next("granted", 15_000);
    expect(holder.seen("session-opened")).to.have.length(0);
    const c = clientsFor(server.url);
    expect((await c.lease.describe({ resource })).lockDelay).to.deep.include({ seconds: 3n });
    await holder.send("release", "released");
    const after = await c.lease.describe({ resource });
    expect(after.held).to.equal(false);
    expect(after.lockDelayUntil).to.equal(undefined);
  });

  it("two Go holders acquire shared and co-hold; their writes are refused SHARED_TOKEN", async () => {
    const resource = uniqueResource("go-sdk-shared");
    const holders = ["go-r1", "go-r2"].map((name) => new GoHolder([server.url], resource, 5000, { shared: true, holder: name }));
    try {
      const granted = await Promise.all(holders.map((h) => h.next("granted", 15_000)));
      expect(granted.map((g) => g.token.shared)).to.deep.equal([true, true]);
      const d = await clientsFor(server.url).lease.describe({ resource });
      expect(d.holders.map((h) => h.holder).sort()).to.deep.equal(["go-r1", "go-r2"]);
      const write = await holders[0].send("write greeting hello", "write");
      expect(write).to.include({ ok: false, reason: "SHARED_TOKEN", code: "InvalidArgument", sent: true });
    } finally {
      await Promise.all(holders.map((h) => h.kill()));
    }
  });

  for (const sessions of [false, true]) {
    const on = sessions ? "on a session" : "on a lease of its own";
    it(`a holder paused past its TTL (${on}): its loss signal fires before its next write is sent, and a forced write is refused STALE_TOKEN`, async () => {
      const resource = uniqueResource("go-sdk-paused");
      holder = new GoHolder([server.url], resource, ttl, { sessions });
      const granted = await holder.next("granted", 15_000);
      if (sessions) expect(granted.token.lease_id).to.equal(holder.seen("session-opened")[0].session_id);
      await holder.next(sessions ? "session-renewed" : "renewed", ttl, () => true, true);

      holder.pause();
      const pausedAt = Date.now();
      // Another holder takes over once etcd lets the paused one's lease go, and writes.
      const b = new FencekeeperClient({ servers: server.url });
      try {
        const leaseB = await b.acquire(resource, { ttl, wait: 10_000 });
        expect(leaseB.token.generation > BigInt(granted.token.generation)).to.equal(true);
        await leaseB.put("greeting", "from B");
        // The paused holder's next write is waiting on its stdin: the first thing it reads when it runs.
        holder.post("write greeting from-A");
        await sleep(Math.max(0, pausedAt + 2 * ttl - Date.now()));
        const resumedAt = Date.now();
        holder.resume();

        const lost = await holder.next("lost", 5000, () => true, true);
        const write = await holder.next("write", 5000, () => true, true);
        console.log(`      Go (${on}): resume to loss signal ${(lost.at - resumedAt).toFixed(1)} ms (paused ${resumedAt - pausedAt} ms, TTL ${ttl} ms)`);
        expect(lost.why).to.equal("deadline");
        expect(lost.valid_until).to.be.below(resumedAt);
        expect(lost.at - resumedAt).to.be.below(1000);
        // The write was refused by the client itself: the loss came first, and nothing was sent.
        expect(write).to.include({ ok: false, error: "LEASE_LOST", why: "deadline", sent: false });
        expect(lost.at).to.be.at.most(write.done_at);
        // Written anyway, with the old token: the fence refuses it.
        const forced = await holder.send("force greeting from-A", "force");
        expect(forced).to.include({ ok: false, error: "STALE_TOKEN", code: "FailedPrecondition", reason: "STALE_TOKEN", fence: leaseB.token.generation.toString(), sent: true });
        const got = await clientsFor(server.url).store.get({ resource, key: "greeting" });
        expect(new TextDecoder().decode(got.value)).to.equal("from B");
        await leaseB.release();
      } finally {
        await b.close();
      }
    });
  }

  it("a renewal answered late (a delaying proxy) is loss, at validUntil, and later answers do not revive the lease", async () => {
    const proxy: DelayProxy = await startDelayProxy(server.url);
    try {
      holder = new GoHolder([proxy.url], uniqueResource("go-sdk-late"), ttl);
      await holder.next("granted", 15_000);
      await holder.next("renewed", ttl, () => true, true);
      proxy.setDelay(ttl + 1000, "toClient"); // renewals reach the server; their answers arrive a TTL late
      const delayedAt = Date.now();
      const lost = await holder.next("lost", 2 * ttl);
      expect(lost.why).to.equal("deadline");
      // The deadline is the one the last renewal confirmed in time set: its send + TTL - drift margin.
      const last = holder.seen("renewed").filter((r) => r.at <= lost.at).at(-1)!;
      expect(lost.valid_until).to.be.closeTo(last.valid_until, 2);
      expect(last.valid_until).to.be.closeTo(last.sent_at + ttl - (100 + ttl / 100), 2);
      expect(lost.at).to.be.at.least(lost.valid_until - 1);
      expect(lost.at - lost.valid_until).to.be.below(500);
      expect(lost.at - delayedAt).to.be.below(ttl);

      await sleep(ttl + 1500); // every held-back answer has arrived by now
      const state = await holder.send("state", "state");
      expect(state.held).to.equal(false);
      expect(state.valid_until).to.be.closeTo(lost.valid_until, 2);
      expect(holder.seen("renewed").filter((r) => r.at > lost.at)).to.deep.equal([]);
      expect(await holder.send("write k v", "write")).to.include({ ok: false, error: "LEASE_LOST", sent: false });
    } finally {
      await holder?.kill();
      await proxy.close();
    }
  });

  for (const [failure, signal] of [
    ["killed (SIGKILL)", "SIGKILL"],
    ["hung (SIGSTOP)", "SIGSTOP"],
  ] as const) {
    it(`replica failover: the server it uses is ${failure}, and the lease lives on through the other (same token, renewed, writable)`, async () => {
      const prefix = `/fk-go-sdk-failover-${process.pid}-${Date.now()}/`;
      const [first, second] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix, args }), startServer({ etcd: etcd.endpoint, prefix, args })]);
      try {
        const resource = uniqueResource("go-sdk-failover");
        holder = new GoHolder([first.url, second.url], resource, ttl);
        const granted = await holder.next("granted", 15_000);
        await holder.next("renewed", ttl, () => true, true);
        expect(holder.seen("stream-opened").map((e) => e.url)).to.deep.equal([first.url]);

        first.process.kill(signal);
        const killedAt = Date.now();
        await sleep(2 * ttl); // the lease lives only if renewals go on through the second replica
        const state = await holder.send("state", "state");
        expect(state.held, "the lease is still held").to.equal(true);
        expect(holder.seen("lost")).to.deep.equal([]);
        expect(holder.seen("stream-failed").some((e) => e.url === first.url)).to.equal(true);
        expect(holder.seen("stream-opened").some((e) => e.url === second.url)).to.equal(true);
        expect(holder.seen("renewed").filter((r) => r.at > killedAt).length).to.be.at.least(4);

        const d = await clientsFor(second.url).lease.describe({ resource });
        expect(d.held).to.equal(true);
        expect(d.token?.generation.toString()).to.equal(granted.token.generation);
        expect(d.token?.leaseId.toString()).to.equal(granted.token.lease_id);
        const write = await holder.send("write k v", "write");
        expect(write).to.include({ ok: true, fence: granted.token.generation });
        expect((await holder.send("state", "state")).held, "still held after the write").to.equal(true);
      } finally {
        await holder?.kill();
        await Promise.all([first.stop("SIGKILL"), second.stop("SIGKILL")]);
      }
    });
  }
});
