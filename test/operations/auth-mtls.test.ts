// Mutual TLS as authentication, through the SDK (ClientOptions.credentials.tls): the identity is the
// certificate's URI SAN (a SPIFFE id), else its subject CN. The case an outside test found: with mutual
// TLS on, a client whose certificate says CN=bob could Put with, Renew and Release alice's lease. Now
// bob is refused each of them, and alice's token verifies offline against the server's public keys.
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { FencekeeperClient, FencekeeperError, PermissionDeniedError, verifyToken, type Lease } from "../../client/index.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { uniqueResource } from "../harness/suite.js";
import { clientCertFor, makeCerts, type Certs } from "./support/certs.js";
import { startMeshServer } from "./support/mesh-server.js";

describe("mutual TLS identifies callers: the SDK as alice (SPIFFE id) and bob (CN)", function () {
  this.timeout(60_000);
  let certs: Certs;
  let etcd: TestEtcd;
  let server: TestServer;
  let alice: FencekeeperClient;
  let bob: FencekeeperClient;
  const ALICE = "spiffe://example.org/alice";

  const client = (who: { cert: string; key: string }) =>
    new FencekeeperClient({
      servers: server.url,
      credentials: { tls: { ca: readFileSync(certs.ca), cert: readFileSync(who.cert), key: readFileSync(who.key) } },
    });

  before(async function () {
    this.timeout(60_000);
    certs = makeCerts();
    etcd = await startEtcd();
    server = await startMeshServer({ etcd: etcd.endpoint, args: ["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] });
    alice = client(clientCertFor(certs, "alice", { cn: "alice's host", uri: ALICE }));
    bob = client(clientCertFor(certs, "bob", { cn: "bob" }));
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all([alice?.close(), bob?.close()]);
    await server?.stop();
    await etcd?.destroy();
    certs?.remove();
  });

  const code = (p: Promise<unknown>) =>
    p.then(
      () => "accepted",
      (e) => (e instanceof FencekeeperError ? `${e instanceof PermissionDeniedError ? "" : "not PermissionDeniedError: "}${Code[e.code]}${e.reason ? ` ${e.reason}` : ""}` : String(e)),
    );

  it("alice's lease carries her SPIFFE id; bob's Put and Delete under her token are PERMISSION_DENIED (NOT_HOLDER, a PermissionDeniedError); her writes go on", async () => {
    const resource = uniqueResource("mtls");
    const lease: Lease = await alice.acquire(resource, { ttl: 10_000 });
    try {
      expect(lease.token.principal).to.equal(ALICE);
      expect((await bob.describe(resource)).token?.principal).to.equal(ALICE);
      expect(await code(bob.store.put(lease.token, "k", "bob was here"))).to.equal("PermissionDenied NOT_HOLDER");
      expect(await code(bob.store.put(lease.token, "k", "bob was here", { mode: "order" }))).to.equal("PermissionDenied NOT_HOLDER");
      expect(await code(bob.store.delete(lease.token, "k"))).to.equal("PermissionDenied NOT_HOLDER");
      await lease.put("k", "alice");
      expect(Buffer.from((await bob.store.get(resource, "k")).value!).toString()).to.equal("alice");
      expect(lease.signal.aborted, "alice still holds").to.equal(false);
      expect((await bob.describe(resource)).token?.generation).to.equal(lease.token.generation);
    } finally {
      await lease.release();
    }
  });

  it("alice's token verifies offline with the server's keys; the same token claiming bob does not", async () => {
    const resource = uniqueResource("mtls");
    const lease = await alice.acquire(resource, { ttl: 10_000 });
    try {
      const keys = await bob.tokenKeys();
      expect(verifyToken(lease.token, keys)).to.deep.equal({ ok: true });
      expect(verifyToken({ ...lease.token, principal: "bob" }, keys)).to.deep.equal({ ok: false, reason: "bad signature" });
      expect(verifyToken({ ...lease.token, keyId: "ffffffffffffffff" }, keys)).to.deep.equal({ ok: false, reason: "unknown key id" });
      expect(verifyToken({ ...lease.token, signature: undefined }, keys)).to.deep.equal({ ok: false, reason: "not signed" });
    } finally {
      await lease.release();
    }
  });
});
