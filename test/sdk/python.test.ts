// The Python library (sdk/python) against real etcd and fencekeeper servers, driven through its test
// program (sdk/python/tests/probe.py): the conformance scenario through the library (with leases of their
// own, on sessions, with a client certificate, with a bearer JWT); a holder process really paused
// (SIGSTOP) past its TTL sees the loss before it sends its next write, and a write forced anyway is
// refused; renewal answers held back past the deadline are loss (on fencekeeper.aio); and the lease
// survives the death (or the hang) of the replica that carries its KeepAlive stream.
// scripts/setup-polyglot.sh installs the library in .conformance/venv (npm test runs it first).
import { expect } from "chai";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { FencekeeperClient } from "../../client/index.js";
import { clientsFor } from "../harness/clients.js";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource } from "../harness/suite.js";
import { makeCerts, type Certs } from "../mesh/support/certs.js";
import { HoldProbe, runScenario, runUnitTests } from "./python-probe.js";

describe("sdk/python: the Python library against real servers", function () {
  this.timeout(60_000);
  const ttl = 2000;
  const args = ["--metrics-listen", "off", "--shutdown-grace", "500"];
  const issuer = "https://issuer.fencekeeper.test";
  let etcd: TestEtcd;
  let server: TestServer;
  /** Servers with authentication on: mutual TLS, and bearer JWTs on cleartext loopback. */
  let mtls: TestServer;
  let bearer: TestServer;
  let certs: Certs;
  let jwt: string;
  let probe: HoldProbe | undefined;
  before(async function () {
    certs = makeCerts();
    const keys = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    writeFileSync(join(certs.dir, "jwt-public.pem"), await exportSPKI(keys.publicKey));
    jwt = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA" }).setSubject("python-sdk").setIssuer(issuer).setAudience("fencekeeper").setExpirationTime("30m").sign(keys.privateKey);
    etcd = await startEtcd();
    [server, mtls, bearer] = await Promise.all([
      startServer({ etcd: etcd.endpoint, args }),
      startServer({ etcd: etcd.endpoint, args: [...args, "--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] }),
      startServer({ etcd: etcd.endpoint, args: [...args, "--jwt-keys", join(certs.dir, "jwt-public.pem"), "--jwt-issuer", issuer, "--jwt-audience", "fencekeeper"] }),
    ]);
  });
  after(async () => {
    await Promise.all([server, mtls, bearer].map((x) => x?.stop()));
    await etcd?.destroy();
    certs?.remove();
  });
  afterEach(() => probe?.kill());

  it("passes its unit tests (deadlines, error mapping, backoff, tokens, token verification)", async () => {
    const r = await runUnitTests();
    expect(r.code, r.output).to.equal(0);
    expect(r.output).to.match(/^Ran \d+ tests/m);
  });

  it("runs the conformance scenario through the library: leases of their own, on sessions, with a client certificate, with a bearer JWT", async () => {
    // All at once: the scenarios spend most of their time waiting.
    const [own, sessions, withCert, withJwt, anonymous] = await Promise.all([
      runScenario(server.url, uniqueResource("py-sdk-scenario")),
      runScenario(server.url, uniqueResource("py-sdk-sessions"), ["--sessions"]),
      runScenario(mtls.url, uniqueResource("py-sdk-mtls"), ["--tls-ca", certs.ca, "--tls-cert", certs.clientCert, "--tls-key", certs.clientKey]),
      runScenario(bearer.url, uniqueResource("py-sdk-jwt"), ["--bearer", jwt]),
      runScenario(bearer.url, uniqueResource("py-sdk-anonymous")),
    ]);
    for (const [what, r] of [["", own], [" on sessions", sessions], [" with a client certificate", withCert], [" with a bearer JWT", withJwt]] as const) {
      expect(r.code, `the scenario${what} failed:\n${r.output}`).to.equal(0);
      expect(r.output).to.match(/^ok clean up$/m);
      expect(r.output).to.match(/^ok batch: two commits/m);
    }
    expect(own.output).to.match(/^ok scoped: released after the block raised$/m);
    expect(sessions.output).to.match(/^ok sessions: two leases on one session, released one by one and by close\(\)$/m);
    expect(anonymous.code).to.equal(1);
    expect(anonymous.output).to.match(/^FAIL UnauthenticatedError UNAUTHENTICATED UNAUTHENTICATED: /m);
  });

  it("acquire(lock_delay=...) reaches the server (on fencekeeper.aio too); release leaves no delay", async () => {
    const c = clientsFor(server.url);
    for (const asyncio of [false, true]) {
      const resource = uniqueResource("py-sdk-lock-delay");
      probe = new HoldProbe([server.url], resource, { ttlSeconds: ttl / 1000, asyncio, lockDelaySeconds: 3 });
      await probe.next("granted", 15_000);
      expect((await c.lease.describe({ resource })).lockDelay, asyncio ? "aio" : "threads").to.deep.include({ seconds: 3n });
      probe.send("release");
      await probe.next("released", 15_000);
      const after = await c.lease.describe({ resource });
      expect(after.held).to.equal(false);
      expect(after.lockDelayUntil).to.equal(undefined);
      await probe.kill();
      probe = undefined;
    }
  });

  it("two Python holders acquire shared and co-hold; their writes are refused SHARED_TOKEN", async () => {
    const resource = uniqueResource("py-sdk-shared");
    const holders = [false, true].map((asyncio) => new HoldProbe([server.url], resource, { ttlSeconds: 5, shared: true, asyncio }));
    try {
      const granted = await Promise.all(holders.map((h) => h.next("granted", 15_000)));
      expect(granted.map((g) => g.token.shared)).to.deep.equal([true, true]);
      expect((await clientsFor(server.url).lease.describe({ resource })).holders).to.have.length(2);
      holders[0].send("write k v");
      const write = await holders[0].next("write", 15_000);
      expect(write).to.include({ sent: true, ok: false, reason: "SHARED_TOKEN", code: "INVALID_ARGUMENT" });
    } finally {
      await Promise.all(holders.map((h) => h.kill()));
    }
  });

  it("a holder paused past its TTL sees the loss before its next write is sent; a forced write is refused STALE_TOKEN", async () => {
    const resource = uniqueResource("py-sdk-paused");
    probe = new HoldProbe([server.url], resource, { ttlSeconds: ttl / 1000 });
    const granted = await probe.next("granted", 15_000);
    await probe.next("renewed", ttl * 2);

    probe.pause();
    const pausedAt = Date.now();
    // Another holder takes over once etcd lets the paused one's lease go, and writes.
    const other = new FencekeeperClient({ servers: server.url });
    try {
      const b = await other.acquire(resource, { ttl, wait: 10_000 });
      expect(b.token.generation > BigInt(granted.token.generation)).to.equal(true);
      await b.put("owner", "b");
      await sleep(Math.max(0, pausedAt + 2 * ttl - Date.now())); // paused for twice the TTL
      // The write is waiting on the paused process's stdin when it runs again.
      probe.send("write owner a");
      const resumedAt = Date.now();
      probe.resume();
      const lost = await probe.next("lost", 5000);
      const write = await probe.next("write", 5000);
      console.log(`      python resume-to-signal: ${lost.at - resumedAt} ms (loss signal at ${lost.at - lost.valid_until} ms after validUntil)`);

      expect(lost).to.include({ why: "deadline", event_set: true });
      expect(lost.at).to.be.at.least(lost.valid_until);
      expect(lost.valid_until).to.be.below(resumedAt);
      // The loss signal fired first; the write through the lease was refused by the library, unsent.
      expect(lost.seq).to.be.below(write.seq);
      expect(write).to.include({ sent: false, ok: false, code: "LEASE_LOST", why: "deadline" });
      expect(lost.at - resumedAt, "the loss is seen as soon as the holder runs").to.be.below(2000);

      // Forced with the old token, bypassing the lease: the fence refuses it.
      probe.send("force-write owner a");
      const forced = await probe.next("write", 5000);
      expect(forced).to.include({ forced: true, sent: true, ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" });
      expect(new TextDecoder().decode((await b.get("owner")).value)).to.equal("b");
      expect((await other.describe(resource)).fence).to.equal(b.token.generation);
    } finally {
      await other.close();
    }
  });

  describe("renewal answers held back past the deadline (fencekeeper.aio)", () => {
    let proxy: DelayProxy;
    beforeEach(async () => (proxy = await startDelayProxy(server.url)));
    afterEach(() => proxy.close());

    it("are loss at validUntil, and the answers that come later change nothing", async () => {
      probe = new HoldProbe([proxy.url], uniqueResource("py-sdk-late"), { ttlSeconds: ttl / 1000, asyncio: true });
      await probe.next("granted", 15_000);
      await probe.next("renewed", ttl * 2);

      proxy.setDelay(ttl + 1000, "toClient"); // renewals reach the server; their answers arrive a TTL late
      const delayedAt = Date.now();
      const lost = await probe.next("lost", ttl * 3);
      expect(lost.why).to.equal("deadline");
      // The deadline is the one the last renewal confirmed in time set, and nothing moved it.
      const confirmed = probe.seen("renewed").filter((r) => r.seq < lost.seq);
      expect(lost.valid_until).to.be.closeTo(confirmed.at(-1)!.valid_until, 2);
      expect(lost.at).to.be.at.least(lost.valid_until);
      expect(lost.at - delayedAt).to.be.below(ttl + 1000);

      await sleep(ttl + 1500); // every held-back answer has arrived by now
      probe.send("status");
      const status = await probe.next("status", 5000);
      expect(status.held).to.equal(false);
      expect(status.valid_until).to.be.closeTo(lost.valid_until, 2);
      expect(probe.seen("renewed").filter((r) => r.seq > lost.seq)).to.deep.equal([]);
      probe.send("write k v");
      expect(await probe.next("write", 5000)).to.include({ sent: false, code: "LEASE_LOST" });
    });
  });

  describe("replica failover", () => {
    let first: TestServer;
    let second: TestServer;
    beforeEach(async () => {
      const prefix = `/fk-py-failover-${process.pid}-${Date.now()}/`;
      [first, second] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix, args }), startServer({ etcd: etcd.endpoint, prefix, args })]);
    });
    afterEach(() => Promise.all([first.stop("SIGKILL"), second.stop("SIGKILL")]));

    async function holdThrough(failure: () => void): Promise<void> {
      const resource = uniqueResource("py-sdk-failover");
      probe = new HoldProbe([first.url, second.url], resource, { ttlSeconds: ttl / 1000 });
      const granted = await probe.next("granted", 15_000);
      await probe.next("stream-opened", ttl, (e) => e.url === first.url);
      await probe.next("renewed", ttl * 2);

      failure();
      const failedAt = Date.now();
      await sleep(ttl * 2); // twice the TTL: the lease lives only if renewals go on through the second replica
      probe.send("status");
      const status = await probe.next("status", 5000);
      expect(status.held, "the lease is still held").to.equal(true);
      expect(status.token).to.deep.equal(granted.token);
      expect(probe.seen("lost")).to.deep.equal([]);
      expect(probe.seen("stream-failed").some((e) => e.url === first.url)).to.equal(true);
      expect(probe.seen("stream-opened").some((e) => e.url === second.url)).to.equal(true);
      expect(probe.seen("renewed").filter((r) => r.sent_at >= failedAt).length).to.be.at.least(4);

      const d = await clientsFor(second.url).lease.describe({ resource });
      expect(d.held).to.equal(true);
      expect(String(d.token?.generation)).to.equal(granted.token.generation);
      expect(String(d.token?.leaseId)).to.equal(granted.token.lease_id);
      probe.send("write k v");
      expect(await probe.next("write", 5000)).to.include({ sent: true, ok: true, fence: granted.token.generation });
    }

    it("the replica carrying the stream is killed (SIGKILL): the lease lives on through the other, same token, and takes writes", async () => {
      await holdThrough(() => first.process.kill("SIGKILL"));
    });

    it("the replica carrying the stream hangs (SIGSTOP): an unanswered renewal moves the stream to the other in time", async () => {
      await holdThrough(() => first.process.kill("SIGSTOP"));
    });
  });
});
