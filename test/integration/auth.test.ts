// Authentication, authorization and holder binding through a real server, with real JWTs made here and
// signed by a key the server is given: a caller without credentials is UNAUTHENTICATED; the policy grants
// verbs on resources and denies the rest; and a second principal trying every operation on another's
// lease (its token, its lease id, its session) is refused, changing nothing, while the holder carries on.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { Etcd3 } from "etcd3";
import { generateKeyPair, SignJWT } from "jose";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { Health } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { TEST_AUDIENCE as AUDIENCE, TEST_ISSUER as ISSUER, TestIssuer } from "../harness/bearer.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

const POLICY = {
  version: 1,
  rules: [
    { principals: ["alice", "bob"], verbs: ["acquire", "write", "read", "observe"], resources: ["shared/*"] },
    { principals: ["alice"], verbs: ["acquire", "write", "read", "observe"], resources: ["alice/*"] },
    { groups: ["sre"], verbs: ["admin", "observe", "read"], resources: ["*"] },
  ],
};

function reasonOf(e: ConnectError): string | undefined {
  return e.findDetails(ErrorInfoSchema)[0]?.reason;
}

describe("authentication, authorization and holder binding (bearer JWTs)", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let issuer: TestIssuer;

  const jwt = (sub: string, o: { groups?: string[]; expiresIn?: string; issuer?: string } = {}) => issuer.token(sub, { ...o, expires: o.expiresIn });
  const clientsAs = (token: string | undefined) => {
    const c = TestIssuer.clients(server.url, token);
    return { ...c, health: createClient(Health, c.transport) };
  };
  let alice: ReturnType<typeof clientsAs>;
  let bob: ReturnType<typeof clientsAs>;
  let carol: ReturnType<typeof clientsAs>; // group sre: admin of every resource
  let nobody: ReturnType<typeof clientsAs>;

  before(async function () {
    this.timeout(60_000);
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-auth-"));
    issuer = await TestIssuer.create(dir, { policy: POLICY });
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: issuer.args });
    alice = clientsAs(await jwt("alice"));
    bob = clientsAs(await jwt("bob"));
    carol = clientsAs(await jwt("carol", { groups: ["sre"] }));
    nobody = clientsAs(undefined);
  });
  after(async function () {
    this.timeout(30_000);
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("authentication", () => {
    it("a call without credentials is UNAUTHENTICATED, saying what is expected, on unary calls and streams alike", async () => {
      const resource = uniqueResource("shared/auth");
      for (const call of [
        () => nobody.lease.acquire({ resource, ttl: ttl(5), holder: "x" }),
        () => nobody.store.getFence({ resource }),
        async () => {
          for await (const _ of nobody.lease.observe({ resource })) break;
        },
      ]) {
        const e = await failure(call());
        expect(e.code, e.message).to.equal(Code.Unauthenticated);
        expect(reasonOf(e)).to.equal("UNAUTHENTICATED");
        expect(e.rawMessage).to.include("Bearer").and.include(ISSUER).and.include(AUDIENCE);
      }
      expect((await alice.lease.describe({ resource })).held, "nothing was acquired").to.equal(false);
    });

    it("an expired token, one from another issuer, and one signed by another key are UNAUTHENTICATED, each saying why", async () => {
      const resource = uniqueResource("shared/auth");
      const other = await generateKeyPair("ES256");
      const forged = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("alice").setIssuer(ISSUER).setAudience(AUDIENCE).setExpirationTime("10m").sign(other.privateKey);
      const cases: [string, string][] = [
        [await jwt("alice", { expiresIn: "-5m" }), "expired"],
        [await jwt("alice", { issuer: "https://elsewhere.test" }), "issuer"],
        [forged, "signature"],
      ];
      for (const [token, why] of cases) {
        const e = await failure(clientsAs(token).lease.acquire({ resource, ttl: ttl(5), holder: "x" }));
        expect(e.code, e.message).to.equal(Code.Unauthenticated);
        expect(e.rawMessage.toLowerCase()).to.include(why);
        expect(e.rawMessage, "the token is never echoed").to.not.include(token);
      }
    });

    it("health answers without credentials (probes carry none)", async () => {
      expect((await nobody.health.check({ service: "" })).status).to.equal(1);
    });
  });

  describe("authorization", () => {
    it("the policy grants acquire on alice/* to alice only: bob is PERMISSION_DENIED, named with the verb and the resource, and nothing changes", async () => {
      const resource = uniqueResource("alice/own");
      const e = await failure(bob.lease.acquire({ resource, ttl: ttl(5), holder: "bob" }));
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
      expect(reasonOf(e)).to.equal("PERMISSION_DENIED");
      expect(e.rawMessage).to.include('"bob"').and.include("acquire").and.include(resource);
      expect(e.findDetails(ErrorInfoSchema)[0].metadata).to.deep.include({ principal: "bob", verb: "acquire", resource });
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
      await alice.lease.acquire({ resource, ttl: ttl(5), holder: "alice" });
    });

    it("each verb is checked: bob may not write, read or observe alice/*, and anything outside the policy is denied", async () => {
      const resource = uniqueResource("alice/own");
      const { token } = await alice.lease.acquire({ resource, ttl: ttl(5), holder: "alice" });
      const denied = [
        () => bob.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token } }),
        () => bob.store.get({ resource, key: "k" }),
        () => bob.store.getFence({ resource }),
        () => bob.lease.describe({ resource }),
        async () => {
          for await (const _ of bob.lease.observe({ resource })) break;
        },
        () => alice.lease.acquire({ resource: uniqueResource("elsewhere"), ttl: ttl(5), holder: "alice" }),
      ];
      for (const call of denied) expect((await failure(call())).code).to.equal(Code.PermissionDenied);
      expect((await alice.store.getFence({ resource })).fence, "bob's Put changed nothing").to.equal(0n);
    });

    it("a Batch authorizes each write on its own: bob's write to alice/* is PERMISSION_DENIED, his write to shared/* commits", async () => {
      const own = uniqueResource("alice/own");
      const shared = uniqueResource("shared/batch");
      const { token: aliceToken } = await alice.lease.acquire({ resource: own, ttl: ttl(5), holder: "alice" });
      const { token: bobToken } = await bob.lease.acquire({ resource: shared, ttl: ttl(5), holder: "bob" });
      const res = await bob.store.batch({
        writes: [
          { write: { case: "put", value: { resource: own, key: "k", value: new Uint8Array([1]), mutation: { token: aliceToken } } } },
          { write: { case: "put", value: { resource: shared, key: "k", value: new Uint8Array([2]), mutation: { token: bobToken } } } },
        ],
      });
      const [denied, done] = res.results.map((r) => r.result);
      expect(denied.case).to.equal("error");
      expect(denied.case === "error" && denied.value.code).to.equal(Code.PermissionDenied);
      expect(denied.case === "error" && denied.value.message).to.include('"bob"').and.include("write").and.include(own);
      expect(done.case === "commit" && done.value.fence).to.equal(bobToken!.generation);
      expect((await alice.store.getFence({ resource: own })).fence, "bob's write changed nothing").to.equal(0n);
    });

    it("a LeaseBatch authorizes each op on its own: bob's ops on alice/* are PERMISSION_DENIED, his op on shared/* is granted", async () => {
      const own = uniqueResource("alice/lb");
      const shared = uniqueResource("shared/lb");
      const { token: aliceToken } = await alice.lease.acquire({ resource: own, ttl: ttl(5), holder: "alice" });
      const res = await bob.lease.leaseBatch({
        ops: [
          { op: { case: "acquire", value: { resource: uniqueResource("alice/lb-new"), ttl: ttl(5), holder: "bob" } } },
          { op: { case: "release", value: { token: aliceToken } } },
          { op: { case: "acquire", value: { resource: shared, ttl: ttl(5), holder: "bob" } } },
        ],
      });
      const [acquire, release, granted] = res.results.map((r) => r.result);
      expect(acquire.case === "error" && acquire.value.code).to.equal(Code.PermissionDenied);
      expect(release.case === "error" && release.value.code).to.equal(Code.PermissionDenied);
      expect(granted.case).to.equal("acquired");
      expect((await alice.lease.describe({ resource: own })).token?.generation, "alice still holds").to.equal(aliceToken!.generation);
    });

    it("an AcquireAll is refused whole when one resource is denied, acquiring none of the others", async () => {
      const shared = uniqueResource("shared/all");
      const err = await failure(bob.lease.acquireAll({ resources: [shared, uniqueResource("alice/all")], ttl: ttl(5), holder: "bob" }));
      expect(err.code).to.equal(Code.PermissionDenied);
      expect((await alice.lease.describe({ resource: shared })).lastIssued).to.equal(0n);
    });

    it("a policy edit is taken up without a restart (the file is watched; SIGHUP too), and a bad edit keeps the policy in force", async () => {
      const resource = uniqueResource("alice/shared-later");
      expect((await failure(bob.lease.acquire({ resource, ttl: ttl(5), holder: "bob" }))).code).to.equal(Code.PermissionDenied);
      const widened = { ...POLICY, rules: [...POLICY.rules, { principals: ["bob"], verbs: ["acquire"], resources: [resource] }] };
      writeFileSync(issuer.policyFile!, JSON.stringify(widened));
      server.process.kill("SIGHUP");
      await eventually(
        () => bob.lease.acquire({ resource, ttl: ttl(5), holder: "bob" }).then(() => true, () => false),
        "bob may acquire once the policy says so",
      );
      writeFileSync(issuer.policyFile!, "{ not json");
      server.process.kill("SIGHUP");
      await eventually(() => server.logs.some((l) => l.includes("policy") && l.includes('"level":50')), "the bad edit is logged as an error");
      const again = uniqueResource("alice/shared-later");
      expect((await failure(bob.lease.acquire({ resource: again, ttl: ttl(5), holder: "bob" }))).code, "the previous policy holds").to.equal(Code.PermissionDenied);
      writeFileSync(issuer.policyFile!, JSON.stringify(POLICY));
      server.process.kill("SIGHUP");
    });
  });

  describe("holder binding: bob, allowed on shared/*, tries every operation on alice's lease", () => {
    let resource: string;
    let token: FencingToken;
    beforeEach(async () => {
      resource = uniqueResource("shared/bound");
      token = (await alice.lease.acquire({ resource, ttl: ttl(10), holder: "alice's worker" })).token!;
      await alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token } });
    });

    async function unchanged() {
      const d = await alice.lease.describe({ resource });
      expect(d).to.deep.include({ held: true, holderPrincipal: "alice", holder: "alice's worker" });
      expect(d.token).to.deep.include({ generation: token.generation, leaseId: token.leaseId });
      expect((await alice.store.get({ resource, key: "k" })).value).to.deep.equal(new Uint8Array([1]));
      // And alice carries on: her writes under the same token still commit.
      await alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token, mode: FenceMode.LIVE } });
    }

    const expectNotHolder = (e: ConnectError) => {
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
      expect(reasonOf(e)).to.equal("NOT_HOLDER");
      expect(e.rawMessage).to.include('"bob"').and.not.include("alice");
    };

    it("Describe and Observe show the holder's principal and generation", async () => {
      expect((await bob.lease.describe({ resource })).holderPrincipal).to.equal("alice");
      for await (const o of bob.lease.observe({ resource })) {
        expect(o).to.deep.include({ held: true, holderPrincipal: "alice" });
        expect(o.token?.generation).to.equal(token.generation);
        break;
      }
    });

    it("Put, Delete and Txn under alice's token, in both fence modes: NOT_HOLDER", async () => {
      for (const mode of [FenceMode.ORDER, FenceMode.LIVE]) {
        expectNotHolder(await failure(bob.store.put({ resource, key: "k", value: new Uint8Array([2]), mutation: { token, mode } })));
        expectNotHolder(await failure(bob.store.delete({ resource, key: "k", mutation: { token, mode } })));
        expectNotHolder(
          await failure(bob.store.txn({ resource, ops: [{ op: { case: "put", value: { key: "k", value: new Uint8Array([3]) } } }], mutation: { token, mode } })),
        );
      }
      await unchanged();
    });

    it("Release of alice's token, Renew and KeepAlive of her lease id: NOT_HOLDER", async () => {
      expectNotHolder(await failure(bob.lease.release({ token })));
      expectNotHolder(await failure(bob.lease.renew({ leaseId: token.leaseId })));
      const answers = [];
      for await (const a of bob.lease.keepAlive(
        (async function* () {
          yield { leaseIds: [token.leaseId] };
        })(),
      )) {
        answers.push(a);
      }
      expect(answers).to.have.length(1);
      const renewal = answers[0].renewals[0];
      expect(renewal.leaseId).to.equal(token.leaseId);
      expect(renewal.error?.code).to.equal(Code.PermissionDenied);
      expect(renewal.error?.message, "the owner of a lease id is nobody else's business").to.not.include("alice");
      await unchanged();
    });

    it("Proclaim under alice's token: NOT_HOLDER for bob and for an admin (carol); alice's own goes through", async () => {
      expectNotHolder(await failure(bob.lease.proclaim({ token, value: new Uint8Array([6]) })));
      const e = await failure(carol.lease.proclaim({ token, value: new Uint8Array([6]) }));
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
      expect(reasonOf(e)).to.equal("NOT_HOLDER");
      expect((await alice.lease.describe({ resource })).value).to.deep.equal(new Uint8Array(0));
      await alice.lease.proclaim({ token, value: new Uint8Array([7]) });
      expect((await bob.lease.describe({ resource })).value).to.deep.equal(new Uint8Array([7]));
      await unchanged();
    });

    it("alice's own Renew, KeepAlive and Release go through", async () => {
      expect((await alice.lease.renew({ leaseId: token.leaseId })).ttl?.seconds, "TTL").to.not.equal(0n);
      for await (const a of alice.lease.keepAlive(
        (async function* () {
          yield { leaseIds: [token.leaseId] };
        })(),
      )) {
        expect(a.renewals[0].error).to.equal(undefined);
      }
      await alice.lease.release({ token });
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
    });

    it("an admin of the resource (carol, group sre) may release alice's lease and write under it, but not keep it alive", async () => {
      const e = await failure(carol.lease.renew({ leaseId: token.leaseId }));
      expect(e.code, e.message).to.equal(Code.PermissionDenied);
      expect(reasonOf(e)).to.equal("NOT_HOLDER");
      await carol.store.put({ resource, key: "k", value: new Uint8Array([9]), mutation: { token } });
      await carol.lease.release({ token });
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
    });

    it("a lease that is no acquisition (granted in etcd directly, as the server's idempotency records are) cannot be renewed: NOT_FOUND", async () => {
      const direct = new Etcd3({ hosts: etcd.endpoint });
      const lease = direct.lease(30, { autoKeepAlive: false });
      try {
        const leaseId = BigInt(await lease.grant());
        const e = await failure(alice.lease.renew({ leaseId }));
        expect(e.code, e.message).to.equal(Code.NotFound);
        expect(reasonOf(e)).to.equal("LEASE_NOT_FOUND");
        for await (const a of alice.lease.keepAlive(
          (async function* () {
            yield { leaseIds: [leaseId] };
          })(),
        )) {
          expect(a.renewals[0].error?.code).to.equal(Code.NotFound);
        }
      } finally {
        await lease.revoke().catch(() => undefined);
        direct.close();
      }
    });
  });

  describe("tokens prove whose they are: signed, and required whole", () => {
    it("a token carries the principal that acquired it, signed; without its signature, or with another principal written in, it is refused (TOKEN_SIGNATURE_INVALID)", async () => {
      const resource = uniqueResource("shared/signed");
      const { token } = await alice.lease.acquire({ resource, ttl: ttl(10), holder: "alice" });
      expect(token!.principal).to.equal("alice");
      expect(token!.signature).to.have.length(64);
      const unsigned = { resource, generation: token!.generation, leaseId: token!.leaseId, principal: "alice" };
      const e = await failure(alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: unsigned } }));
      expect(e.code, e.message).to.equal(Code.InvalidArgument);
      expect(reasonOf(e)).to.equal("TOKEN_SIGNATURE_INVALID");
      const rewritten = await failure(bob.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: { ...token!, principal: "bob" } } }));
      expect(reasonOf(rewritten)).to.equal("TOKEN_SIGNATURE_INVALID");
      expect((await failure(alice.lease.release({ token: unsigned }))).code).to.equal(Code.InvalidArgument);
      expect((await alice.store.getFence({ resource })).fence, "nothing was written").to.equal(0n);
    });

    it("FENCE_MODE_ORDER keeps its meaning with authentication on: the holder's write after its lease ended, before a newer generation wrote, is taken; LIVE refuses it", async function () {
      this.timeout(20_000);
      const resource = uniqueResource("shared/order");
      const { token } = await alice.lease.acquire({ resource, ttl: ttl(2), holder: "alice" });
      await eventually(async () => !(await alice.lease.describe({ resource })).held, "alice's lease expires", 10_000);
      const live = await failure(alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token, mode: FenceMode.LIVE } }));
      expect(reasonOf(live)).to.equal("LEASE_NOT_HELD");
      expect((await alice.store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token, mode: FenceMode.ORDER } })).commit?.fence).to.equal(token!.generation);
      // bob still cannot use it, expired or not.
      expect(reasonOf(await failure(bob.store.put({ resource, key: "k", value: new Uint8Array([2]), mutation: { token } })))).to.equal("NOT_HOLDER");
    });

    it("ListTokenKeys answers any authenticated caller", async () => {
      expect((await bob.lease.listTokenKeys({})).keys).to.have.length.greaterThan(0);
      expect((await failure(nobody.lease.listTokenKeys({}))).code).to.equal(Code.Unauthenticated);
    });
  });

  describe("holder binding on sessions", () => {
    it("bob cannot acquire on, renew, or close alice's session: NOT_HOLDER; alice can", async () => {
      const { sessionId } = await alice.lease.openSession({ ttl: ttl(10), holder: "alice" });
      const resource = uniqueResource("shared/session");
      const e = await failure(bob.lease.acquire({ resource, sessionId, holder: "bob" }));
      expect(e.code).to.equal(Code.PermissionDenied);
      expect(reasonOf(e)).to.equal("NOT_HOLDER");
      expect((await failure(bob.lease.renew({ leaseId: sessionId }))).code).to.equal(Code.PermissionDenied);
      expect((await failure(bob.lease.closeSession({ sessionId }))).code).to.equal(Code.PermissionDenied);
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
      const { token } = await alice.lease.acquire({ resource, sessionId, holder: "alice" });
      expect((await bob.lease.describe({ resource })).holderPrincipal).to.equal("alice");
      expectNotHolderOf(await failure(bob.lease.release({ token: token! })));
      await alice.lease.closeSession({ sessionId });
      expect((await alice.lease.describe({ resource })).held).to.equal(false);
    });
  });
});

function expectNotHolderOf(e: ConnectError) {
  expect(e.code, e.message).to.equal(Code.PermissionDenied);
  expect(e.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("NOT_HOLDER");
}
