// The Java client library (sdk/java) against real etcd and fencekeeper servers, driven through its probe
// (sdk/java/probe): the conformance scenario through the library (leases of their own, on sessions, with a
// client certificate, with a bearer JWT, refused without credentials), the library's own promises, a
// holder really paused past its TTL (on a lease of its own and on a session), a renewal answered too
// late, and the failover of the replica that carries its KeepAlive stream.
// scripts/setup-polyglot.sh builds the library and the probe (npm test runs it first).
import { expect } from "chai";
import { exportSPKI, generateKeyPair, SignJWT } from "jose";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { FencekeeperClient } from "../../client/index.js";
import { clientsFor } from "../harness/clients.js";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { startServer, type TestServer } from "../harness/server.js";
import { sleep, uniqueResource, useServer } from "../harness/suite.js";
import { makeCerts } from "../mesh/support/certs.js";
import { JavaHolder, runChecks } from "./java-probe.js";

describe("sdk/java: the Java client library against real servers", function () {
  this.timeout(60_000);
  const s = useServer(["--metrics-listen", "off"]);
  const ttl = 2000;
  let holder: JavaHolder | undefined;
  afterEach(async () => {
    await holder?.kill();
    holder = undefined;
  });

  it("runs the conformance scenario of SCENARIO.md through the library: own leases, on sessions, with a client certificate (mutual TLS), with a bearer JWT", async () => {
    const certs = makeCerts();
    const servers: TestServer[] = [];
    try {
      const { publicKey, privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
      writeFileSync(join(certs.dir, "jwt-public.pem"), await exportSPKI(publicKey));
      const issuer = "https://issuer.fencekeeper.test";
      const bearer = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA" }).setSubject("java-sdk").setIssuer(issuer).setAudience("fencekeeper").setExpirationTime("10m").sign(privateKey);
      const args = ["--metrics-listen", "off"];
      const [mtls, jwt] = await Promise.all([
        startServer({ etcd: s.etcd.endpoint, args: [...args, "--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] }),
        startServer({ etcd: s.etcd.endpoint, args: [...args, "--jwt-keys", join(certs.dir, "jwt-public.pem"), "--jwt-issuer", issuer, "--jwt-audience", "fencekeeper"] }),
      ]);
      servers.push(mtls, jwt);
      // All at once: the scenarios spend most of their time waiting (the lease kept over three TTLs).
      const [own, sessions, withCertificate, withBearer, anonymous] = await Promise.all([
        runChecks("scenario", s.server.url, uniqueResource("java-sdk-scenario")),
        runChecks("scenario", s.server.url, uniqueResource("java-sdk-sessions"), { sessions: "true" }),
        runChecks("scenario", mtls.url, uniqueResource("java-sdk-mtls"), { "tls-ca": certs.ca, "tls-cert": certs.clientCert, "tls-key": certs.clientKey }),
        runChecks("scenario", jwt.url, uniqueResource("java-sdk-jwt"), { bearer }),
        runChecks("scenario", jwt.url, uniqueResource("java-sdk-anonymous")),
      ]);
      for (const [what, r] of [["", own], [" on sessions", sessions], [" with a client certificate", withCertificate], [" with a bearer JWT", withBearer]] as const) {
        expect(r.code, `the scenario${what} failed:\n${r.output}`).to.equal(0);
        expect(r.output).to.match(/^ok clean up$/m);
        expect(r.output).to.match(/^ok batch: two commits/m);
        expect(r.output).to.match(/^ok acquire: the token verifies offline \(key \w+\)$/m);
      }
      expect(sessions.output).to.match(/^ok acquire: generation \d+, lease \d+ \(a session\)$/m);
      expect(sessions.output).to.match(/^ok sessions: four acquisitions at once share one session$/m);
      expect(sessions.output).to.match(/^ok sessions: a second acquisition of a resource the session holds fails fast: RESOURCE_HELD$/m);
      expect(sessions.output).to.match(/^ok sessions: an Acquire on a session gone behind the client's back loses it with its leases, and is tried again on a new one$/m);
      expect(sessions.output).to.match(/^ok sessions: close\(\) closes the sessions with their leases$/m);
      // Without the credentials the server requires, refused.
      expect(anonymous.code, anonymous.output).to.equal(1);
      expect(anonymous.output).to.match(/^FAIL UnauthenticatedException UNAUTHENTICATED /m);
    } finally {
      await Promise.all(servers.map((x) => x.stop()));
      certs.remove();
    }
  });

  it("two Java holders acquire shared and co-hold; their writes are refused SHARED_TOKEN", async () => {
    const resource = uniqueResource("java-sdk-shared");
    const holders = [0, 1].map(() => new JavaHolder({ servers: [s.server.url], resource, ttlMs: 5000, shared: true }));
    try {
      const granted = await Promise.all(holders.map((h) => h.next("granted", 30_000)));
      expect(granted.map((g) => g.token.shared)).to.deep.equal([true, true]);
      expect((await s.lease.describe({ resource })).holders).to.have.length(2);
      const put = await holders[0].command("put k v", "put");
      expect(put).to.include({ ok: false, code: "INVALID_ARGUMENT", reason: "SHARED_TOKEN" });
    } finally {
      await Promise.all(holders.map((h) => h.kill()));
    }
  });

  it("keeps its own promises: release, fail fast, wait at most, cancel by future or interrupt, withLease, fenced writes", async () => {
    const r = await runChecks("semantics", s.server.url, uniqueResource("java-sdk-semantics"));
    expect(r.code, `a check failed:\n${r.output}`).to.equal(0);
    expect(r.output.match(/^ok /gm)).to.have.length(7);
  });

  it("AcquireOptions.withLockDelay reaches the server, on a lease of its own also with sessions; release leaves no delay", async () => {
    const resource = uniqueResource("java-sdk-lock-delay");
    holder = new JavaHolder({ servers: [s.server.url], resource, ttlMs: ttl, sessions: true, lockDelayMs: 3000 });
    await holder.next("granted", 20_000);
    expect(holder.seen("session-opened")).to.have.length(0);
    expect((await s.lease.describe({ resource })).lockDelay).to.deep.include({ seconds: 3n });
    await holder.command("release", "released");
    const after = await s.lease.describe({ resource });
    expect(after.held).to.equal(false);
    expect(after.lockDelayUntil).to.equal(undefined);
  });

  for (const sessions of [false, true]) {
    const on = sessions ? "on a session" : "on a lease of its own";
    it(`a holder paused past its TTL (${on}) sees its loss before its next write is sent, and its old token is refused`, async () => {
      const resource = uniqueResource("java-sdk-paused");
      // The holder's worker writes through the lease every 100 ms, as a program acting on its lease would.
      holder = new JavaHolder({ servers: [s.server.url], resource, ttlMs: ttl, writeEveryMs: 100, sessions });
      const granted = await holder.next("granted", 20_000);
      if (sessions) expect(holder.seen("session-opened").map((l) => l.session_id)).to.include(granted.token.lease_id);
      await holder.next(sessions ? "session-renewed" : "renewed", ttl * 2);
      await holder.next((l) => l.event === "put" && l.ok === true, ttl * 2);

      holder.pause();
      const pausedAt = Date.now();
      // B takes over once etcd lets the paused holder's lease go, and writes.
      const b = new FencekeeperClient({ servers: s.server.url });
      let bGeneration: bigint;
      let bAcquiredAt: number;
      try {
        const lease = await b.acquire(resource, { ttl: 10_000, wait: 15_000 });
        bAcquiredAt = Date.now();
        bGeneration = lease.token.generation;
        await lease.put("worker", "by B");
      } finally {
        await b.close();
      }
      await sleep(Math.max(0, pausedAt + 2 * ttl - Date.now())); // paused ~4 s in all: twice the TTL
      const resumed = holder.lines.length;
      holder.resume();
      const resumedAt = Date.now();
      const lost = await holder.next("lost", 10_000, resumed);
      const firstWrite = await holder.next((l) => l.event === "put" && l.attempted_at >= resumedAt, 10_000);

      expect(lost.why).to.equal("DEADLINE");
      // Safe: the holder stopped assuming its lease before etcd let it go and B was granted.
      expect(lost.valid_until).to.be.below(bAcquiredAt);
      expect(lost.last_seen_held_at).to.be.below(lost.valid_until);
      expect(lost.at).to.be.at.least(lost.valid_until);
      // The loss was decided first, and the worker's next write was refused by the library, not sent. (Its
      // line may come before the listener's: the worker's look and the keep-alive thread's timer race to
      // see the deadline passed, and the listener runs on the thread that noticed it.)
      expect(firstWrite).to.include({ ok: false, local: true, why: "DEADLINE" });
      expect(lost.lost_at).to.be.at.most(firstWrite.at);
      const sentWhilePausedOrAfter = holder.seen("put").filter((l) => l.ok === true && l.attempted_at >= pausedAt);
      expect(sentWhilePausedOrAfter, "writes sent by the holder after its pause").to.deep.equal([]);
      // A write sent with the old token anyway is refused by the fence.
      const forced = await holder.command("put-token worker stale", "put-token");
      expect(forced).to.include({ ok: false, code: "FAILED_PRECONDITION", reason: "STALE_TOKEN", fence: String(bGeneration!) });
      const read = await clientsFor(s.server.url).store.get({ resource, key: "worker" });
      expect(new TextDecoder().decode(read.value)).to.equal("by B");
      expect(BigInt(granted.token.generation) < bGeneration!).to.equal(true);
      console.log(`      Java (${on}): resume to loss signal ${lost.at - resumedAt} ms (SIGSTOP ${resumedAt - pausedAt} ms, TTL ${ttl} ms)`);
    });
  }

  describe("through a delaying proxy", () => {
    let proxy: DelayProxy;
    beforeEach(async () => (proxy = await startDelayProxy(s.server.url)));
    afterEach(() => proxy.close());

    it("a renewal answered after validUntil is loss, and later answers do not revive the lease", async () => {
      const resource = uniqueResource("java-sdk-late");
      holder = new JavaHolder({ servers: [proxy.url], resource, ttlMs: ttl });
      await holder.next("granted", 20_000);
      await holder.next("renewed", ttl * 2);

      proxy.setDelay(ttl + 1000, "toClient"); // renewals reach the server; their answers arrive a TTL late
      const delayedAt = Date.now();
      const lost = await holder.next("lost", ttl * 3);
      expect(lost.why).to.equal("DEADLINE");
      // The deadline is the one the last renewal confirmed in time set, and the loss fired at it.
      const last = holder.seen("renewed").filter((l) => l.at <= lost.at).at(-1)!;
      expect(lost.valid_until).to.be.closeTo(last.valid_until, 5);
      expect(last.valid_until).to.be.closeTo(last.sent_at + ttl - (100 + ttl / 100), 5);
      expect(lost.at).to.be.at.least(lost.valid_until);
      expect(lost.at - lost.valid_until, "the loss fired late after validUntil").to.be.below(1000);
      expect(lost.at - delayedAt).to.be.below(2 * ttl);

      await sleep(ttl + 1500); // every held-back answer has arrived by now
      const state = await holder.command("state", "state");
      expect(state.held).to.equal(false);
      expect(state.valid_until).to.be.closeTo(lost.valid_until, 5);
      expect(holder.seen("renewed").filter((l) => l.at > lost.at)).to.deep.equal([]);
    });
  });

  describe("replicas on one etcd", () => {
    // Three replicas, started together once: each test fails one of its own and moves to the spare.
    let replicas: TestServer[];
    before(async () => {
      const prefix = `/fk-java-failover-${process.pid}/`;
      const args = ["--metrics-listen", "off", "--shutdown-grace", "500"];
      replicas = await Promise.all([0, 1, 2].map(() => startServer({ etcd: s.etcd.endpoint, prefix, args })));
    });
    after(() => Promise.all(replicas.map((r) => r.stop("SIGKILL"))));

    async function holdThrough(first: TestServer, failure: () => void): Promise<void> {
      const second = replicas[2];
      const resource = uniqueResource("java-sdk-failover");
      holder = new JavaHolder({ servers: [first.url, second.url], resource, ttlMs: ttl });
      const granted = await holder.next("granted", 20_000);
      await holder.next((l) => l.event === "stream-opened" && l.url === first.url, ttl * 2);
      await holder.next("renewed", ttl * 2);

      failure();
      const failedAt = Date.now();
      await sleep(ttl * 2); // twice the TTL: the lease lives only if renewals go on through the second replica
      const state = await holder.command("state", "state");
      expect(state.held, "the lease is still held").to.equal(true);
      expect(holder.seen("lost")).to.deep.equal([]);
      expect(holder.seen("stream-failed").some((l) => l.url === first.url)).to.equal(true);
      expect(holder.seen("stream-opened").some((l) => l.url === second.url)).to.equal(true);
      expect(holder.seen("renewed").filter((l) => l.confirmed_at >= failedAt).length).to.be.at.least(3);

      const d = await clientsFor(second.url).lease.describe({ resource });
      expect(d.held).to.equal(true);
      expect(String(d.token!.generation)).to.equal(granted.token.generation);
      expect(String(d.token!.leaseId)).to.equal(granted.token.lease_id);
      const put = await holder.command("put k v", "put");
      expect(put).to.include({ ok: true, fence: granted.token.generation });
    }

    it("the replica the client uses is killed (SIGKILL): the stream moves to the other and the lease lives on", async () => {
      await holdThrough(replicas[0], () => replicas[0].process.kill("SIGKILL"));
    });

    it("the replica the client uses hangs (SIGSTOP): an unanswered renewal moves the stream to the other in time", async () => {
      await holdThrough(replicas[1], () => replicas[1].process.kill("SIGSTOP"));
    });
  });
});
