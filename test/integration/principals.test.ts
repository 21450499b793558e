// What one principal can do to or learn of another's, beyond holder binding (auth.test.ts), through a real
// server with real JWTs signed here: idempotency keys are each principal's own; tokens that live too long,
// names with control characters and URI-looking subjects are refused; lock-delays can be lifted by an
// admin; NOT_HOLDER names the owner only to admins.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SignJWT } from "jose";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { TEST_AUDIENCE as AUDIENCE, TEST_ISSUER as ISSUER, TestIssuer } from "../harness/bearer.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, uniqueResource } from "../harness/suite.js";
import { clientCertFor, makeCerts, type Certs } from "../operations/support/certs.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

const POLICY = {
  version: 1,
  rules: [
    { principals: ["alice", "bob"], verbs: ["acquire", "write", "read", "observe"], resources: ["shared/*"] },
    { groups: ["sre"], verbs: ["admin", "observe", "read"], resources: ["*"] },
  ],
};

function reasonOf(e: ConnectError): string | undefined {
  return e.findDetails(ErrorInfoSchema)[0]?.reason;
}

describe("principals kept apart (bearer JWTs)", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let issuer: TestIssuer;

  const jwt = (sub: string, groups: string[] = []) => issuer.token(sub, { groups });
  const clientsAs = (token: string | undefined, url = server.url) => TestIssuer.clients(url, token);
  let alice: ReturnType<typeof clientsAs>;
  let bob: ReturnType<typeof clientsAs>;
  let carol: ReturnType<typeof clientsAs>; // group sre: admin of every resource

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-principals-"));
    issuer = await TestIssuer.create(dir, { policy: POLICY });
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: issuer.args });
    alice = clientsAs(await jwt("alice"));
    bob = clientsAs(await jwt("bob"));
    carol = clientsAs(await jwt("carol", ["sre"]));
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("tokens valid for longer than --jwt-max-lifetime (a day by default) are refused", () => {
    const signed = (exp: number, iat?: number) => {
      const t = new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("alice").setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime(exp);
      return (iat === undefined ? t : t.setIssuedAt(iat)).sign(issuer.privateKey);
    };
    const now = () => Math.floor(Date.now() / 1000);

    it("exp in the year 3000, with or without iat, is UNAUTHENTICATED (lifetime_too_long), saying the limit; nothing is acquired", async () => {
      const resource = uniqueResource("shared/lifetime");
      const year3000 = Math.floor(Date.UTC(3000, 0, 1) / 1000);
      for (const [token, counted] of [[await signed(year3000, now()), "iat"], [await signed(year3000), "no \"iat\""]] as const) {
        const e = await failure(clientsAs(token).lease.acquire({ resource, ttl: ttl(5), holder: "x" }));
        expect(e.code, e.message).to.equal(Code.Unauthenticated);
        expect(e.findDetails(ErrorInfoSchema)[0]?.metadata.problem).to.equal("lifetime_too_long");
        expect(e.rawMessage).to.include("3000-01-01").and.include("--jwt-max-lifetime").and.include("1 day").and.include(counted);
      }
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
    });

    it("a token valid for 23 hours is accepted, and one issued 25 hours before it expires is not", async () => {
      const resource = uniqueResource("shared/lifetime");
      await clientsAs(await signed(now() + 23 * 3600, now())).lease.acquire({ resource, ttl: ttl(5), holder: "x" });
      const e = await failure(clientsAs(await signed(now() + 600, now() - 25 * 3600 + 600)).lease.describe({ resource }));
      expect(e.code, e.message).to.equal(Code.Unauthenticated);
    });
  });

  describe("a principal's name holds no control character", () => {
    it("a JWT whose sub holds a newline, a NUL, an escape or a lone surrogate is UNAUTHENTICATED, naming the character; nothing is acquired", async () => {
      const resource = uniqueResource("shared/names");
      for (const [sub, named] of [["alice\nadmin", "U+000A"], ["alice\u0000", "U+0000"], ["alice\u001b[2J", "U+001B"], ["alice\ud800", "U+D800"]]) {
        const e = await failure(clientsAs(await jwt(sub)).lease.acquire({ resource, ttl: ttl(5), holder: "x" }));
        expect(e.code, e.message).to.equal(Code.Unauthenticated);
        expect(e.rawMessage).to.include('"sub"').and.include(named);
      }
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
    });
  });

  describe("a JWT's sub and a certificate's URI SAN are kept apart unless --jwt-uri-subjects on", () => {
    const SPIFFE = "spiffe://example.org/alice";
    it("by default, a token whose sub looks like a URI (scheme://) is UNAUTHENTICATED (uri_subject), naming the flag", async () => {
      const resource = uniqueResource("shared/uri");
      for (const sub of [SPIFFE, "https://example.org/alice"]) {
        const e = await failure(clientsAs(await jwt(sub)).lease.acquire({ resource, ttl: ttl(5), holder: "x" }));
        expect(e.code, e.message).to.equal(Code.Unauthenticated);
        expect(e.findDetails(ErrorInfoSchema)[0]?.metadata.problem).to.equal("uri_subject");
        expect(e.rawMessage).to.include("--jwt-uri-subjects");
      }
      // A name with a colon but no "://" is no certificate's URI: authenticated (then refused by the policy).
      const e = await failure(clientsAs(await jwt("repo:example/app:ref:main")).lease.describe({ resource }));
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
    });

    it("with --jwt-uri-subjects on, the same token is served as that principal", async () => {
      const other = await startServer({
        etcd: etcd.endpoint,
        args: ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--jwt-uri-subjects", "on"],
      });
      try {
        const resource = uniqueResource("uri-on");
        const { token } = await clientsAs(await jwt(SPIFFE), other.url).lease.acquire({ resource, ttl: ttl(5), holder: "x" });
        expect(token?.principal).to.equal(SPIFFE);
      } finally {
        await other.stop();
      }
    });
  });

  describe("an admin lifts a running lock-delay (LiftLockDelay)", () => {
    it("alice's lease expires with a 50 s lock-delay; bob may not lift it, carol (admin) does, and bob's waiting Acquire is granted at once", async () => {
      const resource = uniqueResource("shared/lift");
      const a = (await alice.lease.acquire({ resource, ttl: ttl(2), holder: "alice", lockDelay: ttl(50) })).token!;
      expect((await carol.lease.liftLockDelay({ resource })).lifted, "a holder's own lock-delay is not one being served").to.equal(false);
      const waiting = bob.lease.acquire({ resource, ttl: ttl(10), holder: "bob", wait: true }, { timeoutMs: 40_000 });
      // alice never renews: her lease expires, and the lock-delay begins.
      await eventually(async () => (await carol.lease.describe({ resource })).lockDelayUntil !== undefined, "the lock-delay is served", 15_000);

      const e = await failure(bob.lease.liftLockDelay({ resource }));
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
      expect(e.rawMessage).to.include("admin");
      expect((await carol.lease.describe({ resource })).lockDelayUntil, "bob changed nothing").to.not.equal(undefined);

      const liftedAt = Date.now();
      const lifted = await carol.lease.liftLockDelay({ resource });
      expect(lifted).to.deep.include({ lifted: true, generation: a.generation });
      const granted = await waiting;
      expect(Date.now() - liftedAt, "granted when lifted, not 50 s later").to.be.below(10_000);
      expect(granted.token!.generation > a.generation, "a newer generation").to.equal(true);
      expect((await carol.lease.liftLockDelay({ resource })).lifted, "nothing left to lift").to.equal(false);
    });
  });

  describe("NOT_HOLDER does not say whose a lease is", () => {
    it("bob renewing alice's lease id, keeping it alive, closing her session or writing under her token learns NOT_HOLDER, not her name", async () => {
      const resource = uniqueResource("shared/owner");
      const { token } = await alice.lease.acquire({ resource, ttl: ttl(10), holder: "alice's worker" });
      const { sessionId } = await alice.lease.openSession({ ttl: ttl(10), holder: "alice's session" });
      const refusals = [
        await failure(bob.lease.renew({ leaseId: token!.leaseId })),
        await failure(bob.lease.closeSession({ sessionId })),
        await failure(bob.lease.acquire({ resource: uniqueResource("shared/owner"), holder: "bob", sessionId })),
        await failure(bob.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token } })),
      ];
      for (const e of refusals) {
        expect(e.code, e.message).to.equal(Code.PermissionDenied);
        expect(reasonOf(e)).to.equal("NOT_HOLDER");
        expect(e.rawMessage).to.not.include("alice");
        expect(Object.values(e.findDetails(ErrorInfoSchema)[0].metadata).join(" ")).to.not.include("alice");
      }
      for await (const a of bob.lease.keepAlive(
        (async function* () {
          yield { leaseIds: [token!.leaseId] };
        })(),
      )) {
        expect(a.renewals[0].error?.code).to.equal(Code.PermissionDenied);
        expect(a.renewals[0].error?.message).to.not.include("alice");
      }
    });
  });

  describe("the contract says what the server does: an admin may release and write under a holder's token, never renew its lease", () => {
    it("DescribeResponse.holder_principal's comment says so, and carol (admin) renewing alice's lease is NOT_HOLDER while her release works", async () => {
      const proto = readFileSync(new URL("../../proto/fencekeeper/v1/lease.proto", import.meta.url), "utf8").split("\n");
      const at = proto.findIndex((l) => l.trim() === "string holder_principal = 8;");
      let start = at;
      while (proto[start - 1].trim().startsWith("//")) start--;
      const comment = proto.slice(start, at).map((l) => l.trim().replace(/^\/\/ ?/, "")).join(" ");
      expect(comment).to.match(/only this principal may renew/i).and.match(/an admin of the resource may not/i);

      const resource = uniqueResource("shared/admin-renew");
      const { token } = await alice.lease.acquire({ resource, ttl: ttl(10), holder: "alice" });
      expect(reasonOf(await failure(carol.lease.renew({ leaseId: token!.leaseId })))).to.equal("NOT_HOLDER");
      await carol.lease.release({ token });
    });
  });

  describe("idempotency keys are each principal's own", () => {
    it("bob using the key alice will use first takes nothing from her: her write commits, and each retry replays its own", async () => {
      const mine = uniqueResource("shared/idem-alice");
      const his = uniqueResource("shared/idem-bob");
      const idempotencyKey = `put-${mine}`;
      const a = (await alice.lease.acquire({ resource: mine, ttl: ttl(10), holder: "alice" })).token!;
      const b = (await bob.lease.acquire({ resource: his, ttl: ttl(10), holder: "bob" })).token!;
      const bobs = () => bob.store.put({ resource: his, key: "k", value: new Uint8Array([2]), mutation: { token: b, idempotencyKey } });
      const alices = () => alice.store.put({ resource: mine, key: "k", value: new Uint8Array([1]), mutation: { token: a, idempotencyKey } });

      expect((await bobs()).commit?.replayed).to.equal(false);
      // Before: IDEMPOTENCY_KEY_REUSED, which also told bob that the key had been used.
      expect((await alices()).commit?.replayed, "alice's first write applies").to.equal(false);
      expect((await alice.store.get({ resource: mine, key: "k" })).value).to.deep.equal(new Uint8Array([1]));
      expect((await alices()).commit?.replayed, "alice's retry replays her write").to.equal(true);
      expect((await bobs()).commit?.replayed, "bob's retry replays his").to.equal(true);
    });

    it("within one principal a key is still one request: alice's key sent for another request is IDEMPOTENCY_KEY_REUSED", async () => {
      const resource = uniqueResource("shared/idem-same");
      const idempotencyKey = `txn-${resource}`;
      const token = (await alice.lease.acquire({ resource, ttl: ttl(10), holder: "alice" })).token!;
      await alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token, idempotencyKey } });
      const e = await failure(alice.store.put({ resource, key: "k", value: new Uint8Array([9]), mutation: { token, idempotencyKey } }));
      expect(e.code, e.message).to.equal(Code.InvalidArgument);
      expect(reasonOf(e)).to.equal("IDEMPOTENCY_KEY_REUSED");
    });
  });
});

describe("a client certificate whose name holds a control character is refused (mutual TLS)", function () {
  this.timeout(60_000);
  let certs: Certs;
  let etcd: TestEtcd;
  let server: TestServer;
  const clientWith = (who: { cert: string; key: string }) =>
    createClient(
      LeaseService,
      createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca: readFileSync(certs.ca), cert: readFileSync(who.cert), key: readFileSync(who.key) } }),
    );

  before(async function () {
    certs = makeCerts();
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: ["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] });
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
    certs?.remove();
  });

  it("a subject CN or a URI SAN with a control character is UNAUTHENTICATED, saying which; a plain one is served", async () => {
    const resource = uniqueResource("mtls-names");
    const cases = [
      [clientCertFor(certs, "cn-newline", { cn: "alice\nadmin" }), "subject CN", "U+000A"],
      [clientCertFor(certs, "uri-control", { cn: "bob", uri: "spiffe://example.org/alice\u0001" }), "URI SAN", "U+0001"],
    ] as const;
    for (const [cert, where, named] of cases) {
      const e = await failure(clientWith(cert).acquire({ resource, ttl: ttl(5), holder: "x" }));
      expect(e.code, e.message).to.equal(Code.Unauthenticated);
      expect(e.rawMessage).to.include(where).and.include(named);
    }
    await clientWith(clientCertFor(certs, "plain", { cn: "carol" })).acquire({ resource, ttl: ttl(5), holder: "x" });
  });
});
