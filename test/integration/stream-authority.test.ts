// Open streams do not outlive the authority they were opened with: a KeepAlive or Observe stream whose
// JWT expires is ended UNAUTHENTICATED at its expiry, and one whose verb the policy stops granting is
// ended PERMISSION_DENIED at the reload, while another principal's streams carry on. The SDK, given a
// token provider, reconnects with a fresh token and keeps its leases across those ends.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { LeaseService, type KeepAliveRequest } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencekeeperClient, type ClientEvent } from "../../client/index.js";
import { AsyncQueue } from "../../client/async-queue.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { makeCerts, type Certs } from "../operations/support/certs.js";
import { failure, sleep, uniqueResource } from "../harness/suite.js";

const ISSUER = "https://issuer.test";
const AUDIENCE = "fencekeeper";
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

const ALICE = [
  { principals: ["alice"], verbs: ["acquire", "observe"], resources: ["s/*"] },
  { principals: ["alice"], verbs: ["acquire"], resources: ["k/*"] },
];
const policy = (alice = ALICE) => ({
  version: 1,
  rules: [...alice, { principals: ["bob"], verbs: ["acquire", "observe"], resources: ["s/*"] }],
});

/** How a stream ended, or "open" if it was still open after `ms`. */
async function endOf(stream: AsyncIterable<unknown>, ms: number): Promise<{ at: number; error?: ConnectError } | "open"> {
  const ended = (async () => {
    try {
      for await (const _ of stream);
      return { at: Date.now() };
    } catch (err) {
      return { at: Date.now(), error: ConnectError.from(err) };
    }
  })();
  return Promise.race([ended, sleep(ms).then(() => "open" as const)]);
}

describe("open streams end with their authority (issue 20, finding 9)", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let server: TestServer;
  let key: CryptoKey;
  let otherKey: CryptoKey;
  let publicKeys: string[];
  let policyFile: string;

  /** A JWT for `sub` that expires `seconds` from now (whole seconds, as "exp" is). */
  const jwt = (sub: string, seconds = 600, signer = key) =>
    new SignJWT({})
      .setProtectedHeader({ alg: "ES256" })
      .setSubject(sub)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
      .sign(signer);
  const expOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()) as { exp: number }).exp * 1000;
  const bearer = (token: string): Interceptor => (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const leaseAs = (token: string) => createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, interceptors: [bearer(token)] }));

  /** A KeepAlive stream renewing each of `leaseIds` every 300 ms (a message each), until it ends. */
  function keepAliveStream(client: ReturnType<typeof leaseAs>, leaseIds: bigint[], signal: AbortSignal) {
    const requests = new AsyncQueue<KeepAliveRequest>();
    const send = () => leaseIds.forEach((leaseId) => requests.push({ leaseId, leaseIds: [] } as unknown as KeepAliveRequest));
    const timer = setInterval(send, 300);
    signal.addEventListener("abort", () => clearInterval(timer));
    send();
    const answers = client.keepAlive(requests, { signal, timeoutMs: 0 });
    const renewals: { leaseId: bigint; at: number; error?: string }[] = [];
    return {
      renewals,
      stream: (async function* () {
        try {
          for await (const a of answers) {
            renewals.push({ leaseId: a.leaseId, at: Date.now(), error: a.error?.message });
            yield a;
          }
        } finally {
          clearInterval(timer);
          requests.close();
        }
      })(),
    };
  }

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-stream-authority-"));
    const pair = await generateKeyPair("ES256");
    const other = await generateKeyPair("ES256");
    key = pair.privateKey;
    otherKey = other.privateKey;
    publicKeys = [await exportSPKI(pair.publicKey), await exportSPKI(other.publicKey)];
    writeFileSync(join(dir, "jwt.pem"), publicKeys[0]);
    writeFileSync(join(dir, "jwt-other.pem"), publicKeys[1]);
    policyFile = join(dir, "policy.json");
    writeFileSync(policyFile, JSON.stringify(policy()));
    etcd = await startEtcd();
    server = await startServer({
      etcd: etcd.endpoint,
      args: ["--jwt-keys", `${join(dir, "jwt.pem")},${join(dir, "jwt-other.pem")}`, "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policyFile],
    });
  });
  after(async function () {
    await server?.stop();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    writeFileSync(policyFile, JSON.stringify(policy()));
    await sleep(500); // the reload, 100 ms after the change
  });

  it("a KeepAlive stream and an Observe stream opened with a JWT that expires in 2 s end UNAUTHENTICATED at its expiry, saying so", async () => {
    const longLived = leaseAs(await jwt("alice"));
    const resource = uniqueResource("s/expiry");
    const { token } = await longLived.acquire({ resource, ttl: ttl(10), holder: "alice" });
    const short = await jwt("alice", 2);
    const exp = expOf(short);
    const abort = new AbortController();
    try {
      const ka = keepAliveStream(leaseAs(short), [token!.leaseId], abort.signal);
      const observe = leaseAs(short).observe({ resource }, { signal: abort.signal, timeoutMs: 0 });
      const [kaEnd, obsEnd] = await Promise.all([endOf(ka.stream, exp - Date.now() + 3000), endOf(observe, exp - Date.now() + 3000)]);
      for (const [name, end] of [["KeepAlive", kaEnd], ["Observe", obsEnd]] as const) {
        expect(end, `the ${name} stream is ended once its token expires`).to.not.equal("open");
        if (end === "open") continue;
        expect(end.error?.code, `${name}: ${end.error?.message}`).to.equal(Code.Unauthenticated);
        expect(end.error?.rawMessage).to.match(/credentials expired at .*; reconnect with fresh ones/);
        expect(end.error?.findDetails(ErrorInfoSchema)[0]?.metadata.problem).to.equal("expired");
        expect(end.at, `${name} ended at its token's expiry`).to.be.within(exp - 50, exp + 2000);
      }
      expect(ka.renewals.length, "the KeepAlive stream renewed until then").to.be.greaterThan(2);
      expect(ka.renewals.every((r) => r.error === undefined)).to.equal(true);
    } finally {
      abort.abort();
    }
  });

  it("a policy reload that withdraws alice's observe ends her Observe stream PERMISSION_DENIED, while bob's carries on", async () => {
    const resource = uniqueResource("s/policy");
    const abort = new AbortController();
    try {
      const alice = leaseAs(await jwt("alice"));
      const bob = leaseAs(await jwt("bob"));
      const aliceStream = alice.observe({ resource }, { signal: abort.signal, timeoutMs: 0 })[Symbol.asyncIterator]();
      const bobStream = bob.observe({ resource }, { signal: abort.signal, timeoutMs: 0 })[Symbol.asyncIterator]();
      expect((await aliceStream.next()).value.held).to.equal(false);
      expect((await bobStream.next()).value.held).to.equal(false);
      const rewritten = Date.now();
      writeFileSync(policyFile, JSON.stringify(policy([{ ...ALICE[0], verbs: ["acquire"] }, ALICE[1]])));
      const end = await endOf({ [Symbol.asyncIterator]: () => aliceStream }, 4000);
      expect(end, "alice's Observe is ended once the policy no longer grants it").to.not.equal("open");
      if (end === "open") return;
      expect(end.error?.code, end.error?.message).to.equal(Code.PermissionDenied);
      expect(end.error?.rawMessage).to.match(/policy changed.*"alice" may not observe/);
      expect(end.at - rewritten, "within the reload's pause (100 ms), on a loaded machine").to.be.below(3000);
      // Bob's stream is open and reports what happens next.
      await bob.acquire({ resource, ttl: ttl(5), holder: "bob" });
      const next = await Promise.race([bobStream.next(), sleep(3000).then(() => undefined)]);
      expect(next?.value?.holderPrincipal, "bob's Observe goes on").to.equal("bob");
    } finally {
      abort.abort();
    }
  });

  it("a policy reload that withdraws alice's acquire on s/* refuses her renewals of the lease holding s/..., on her open KeepAlive stream, a new one and Renew, while her other lease and bob's go on", async () => {
    const abort = new AbortController();
    try {
      const alice = leaseAs(await jwt("alice"));
      const bob = leaseAs(await jwt("bob"));
      const withdrawn = uniqueResource("s/withdrawn");
      const a = (await alice.acquire({ resource: withdrawn, ttl: ttl(15), holder: "alice" })).token!.leaseId;
      const b = (await alice.acquire({ resource: uniqueResource("k/kept"), ttl: ttl(15), holder: "alice" })).token!.leaseId;
      const c = (await bob.acquire({ resource: uniqueResource("s/bob"), ttl: ttl(15), holder: "bob" })).token!.leaseId;
      const aliceKa = keepAliveStream(alice, [a, b], abort.signal);
      const bobKa = keepAliveStream(bob, [c], abort.signal);
      const aliceEnd = endOf(aliceKa.stream, 5500);
      const bobEnd = endOf(bobKa.stream, 5500);
      await sleep(700);
      const rewritten = Date.now();
      writeFileSync(policyFile, JSON.stringify(policy([ALICE[1]])));
      await sleep(3500);
      const after = (id: bigint, r: typeof aliceKa.renewals) => r.filter((x) => x.leaseId === id && x.at > rewritten + 2500);
      expect(after(a, aliceKa.renewals).length, "alice's stream still answers for the lease on s/...").to.be.greaterThan(0);
      for (const r of after(a, aliceKa.renewals)) expect(r.error, "renewal of the lease holding s/...").to.match(/may no longer renew lease .*"s\/withdrawn.*no longer grants acquire/);
      const firstRefusal = aliceKa.renewals.find((x) => x.leaseId === a && x.error);
      expect(firstRefusal!.at - rewritten, "refused at the first renewal after the reload").to.be.below(2500);
      expect(after(b, aliceKa.renewals).length).to.be.greaterThan(0);
      expect(after(b, aliceKa.renewals).every((x) => x.error === undefined), "alice's lease on k/... is renewed").to.equal(true);
      expect(after(c, bobKa.renewals).length).to.be.greaterThan(0);
      expect(after(c, bobKa.renewals).every((x) => x.error === undefined), "bob's lease is renewed").to.equal(true);
      // Neither a unary Renew nor a new stream gets round the refusal.
      const renew = await failure(alice.renew({ leaseId: a }));
      expect(renew.code).to.equal(Code.PermissionDenied);
      expect(renew.findDetails(ErrorInfoSchema)[0]?.metadata).to.deep.include({ verb: "acquire", resource: withdrawn });
      expect((await alice.renew({ leaseId: b })).ttl).to.not.equal(undefined);
      const fresh = keepAliveStream(alice, [a], abort.signal);
      const first = (await fresh.stream.next()).value as { error?: { code: number } };
      expect(first.error?.code, "a new stream is refused the lease too").to.equal(Code.PermissionDenied);
      expect(await aliceEnd, "alice's stream stays open for her other leases").to.equal("open");
      expect(await bobEnd).to.equal("open");
    } finally {
      abort.abort();
    }
  });

  it("after a reload, one KeepAlive message renewing 150 leases is answered for each of them (more than the 64 questions etcd is asked at once)", async () => {
    const alice = leaseAs(await jwt("alice"));
    const ids = await Promise.all(
      Array.from({ length: 150 }, async (_, i) => (await alice.acquire({ resource: uniqueResource(`k/many-${i}`), ttl: ttl(15), holder: "alice" })).token!.leaseId),
    );
    writeFileSync(policyFile, JSON.stringify(policy([ALICE[1], { principals: ["alice"], verbs: ["read"], resources: ["*"] }])));
    await sleep(500);
    const requests = new AsyncQueue<KeepAliveRequest>();
    requests.push({ leaseIds: ids } as unknown as KeepAliveRequest);
    const abort = new AbortController();
    try {
      for await (const answer of alice.keepAlive(requests, { signal: abort.signal, timeoutMs: 0 })) {
        expect(answer.renewals.map((r) => r.leaseId)).to.deep.equal(ids);
        expect(answer.renewals.filter((r) => r.error).map((r) => r.error!.message)).to.deep.equal([]);
        break;
      }
    } finally {
      abort.abort();
      requests.close();
    }
  });

  it("a key taken out of the JWT key files at SIGHUP ends the streams opened with tokens it signed UNAUTHENTICATED; streams with the other key's tokens go on", async () => {
    const resource = uniqueResource("s/keys");
    const abort = new AbortController();
    const reloads = () => server.logs.filter((l) => l.includes("JWT verification keys reloaded")).length;
    try {
      const alice = leaseAs(await jwt("alice"));
      const bob = leaseAs(await jwt("bob", 600, otherKey));
      const aliceStream = alice.observe({ resource }, { signal: abort.signal, timeoutMs: 0 })[Symbol.asyncIterator]();
      const bobStream = bob.observe({ resource }, { signal: abort.signal, timeoutMs: 0 })[Symbol.asyncIterator]();
      await Promise.all([aliceStream.next(), bobStream.next()]);
      const before = reloads();
      writeFileSync(join(dir, "jwt.pem"), publicKeys[1]); // alice's key is gone; bob's stays
      server.process.kill("SIGHUP");
      const end = await endOf({ [Symbol.asyncIterator]: () => aliceStream }, 4000);
      expect(reloads()).to.equal(before + 1);
      expect(end, "alice's stream is ended once her token's key is gone").to.not.equal("open");
      if (end === "open") return;
      expect(end.error?.code, end.error?.message).to.equal(Code.Unauthenticated);
      expect(end.error?.rawMessage).to.match(/no longer accepted, after the server's keys changed: bearer token refused/);
      await bob.acquire({ resource, ttl: ttl(5), holder: "bob" });
      const next = await Promise.race([bobStream.next(), sleep(3000).then(() => undefined)]);
      expect(next?.value?.holderPrincipal, "bob's Observe goes on").to.equal("bob");
    } finally {
      abort.abort();
      const before = reloads();
      writeFileSync(join(dir, "jwt.pem"), publicKeys[0]);
      server.process.kill("SIGHUP");
      while (reloads() === before) await sleep(50);
    }
  });

  it("the SDK, given a token provider, reconnects with a fresh token each time its KeepAlive stream is ended at expiry, and keeps its lease", async () => {
    // Each token lives 3 s; the provider hands out a new one once the old has less than 2 s left.
    let current = { token: await jwt("alice", 3), mintedAt: Date.now() };
    const provider = async () => {
      if (Date.now() - current.mintedAt > 1000) current = { token: await jwt("alice", 3), mintedAt: Date.now() };
      return current.token;
    };
    const events: ClientEvent[] = [];
    const client = new FencekeeperClient({ servers: [server.url], credentials: { bearer: provider }, onEvent: (e) => events.push(e) });
    try {
      const lease = await client.acquire(uniqueResource("s/sdk"), { ttl: 3000 });
      await sleep(8000);
      const ends = events.filter((e) => e.type === "stream-failed").map((e) => ConnectError.from((e as { error: unknown }).error));
      const expired = ends.filter((e) => e.code === Code.Unauthenticated && /credentials expired at/.test(e.rawMessage));
      expect(expired.length, "the stream was ended at least twice as its tokens expired").to.be.at.least(2);
      expect(events.filter((e) => e.type === "lost"), "no lease lost").to.deep.equal([]);
      expect(lease.held).to.equal(true);
      await lease.release();
    } finally {
      await client.close();
    }
  });
});

describe("open streams end with their client certificate (issue 20, finding 9)", function () {
  this.timeout(60_000);
  let certs: Certs;
  let etcd: TestEtcd;
  let server: TestServer;

  /** A client certificate for CN=`cn` from the test CA whose notAfter is `seconds` from now (whole seconds). */
  function shortLivedCert(cn: string, seconds: number): { cert: Buffer; key: Buffer; notAfter: number } {
    const at = (f: string) => join(certs.dir, f);
    const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: certs.dir, stdio: ["ignore", "ignore", "pipe"] });
    writeFileSync(at("short.cnf"), "[ca]\ndefault_ca = short\n[short]\ndatabase = short-index.txt\nnew_certs_dir = .\nserial = short-serial\ndefault_md = sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n");
    writeFileSync(at("short-index.txt"), "");
    writeFileSync(at("short-serial"), "01\n");
    writeFileSync(at("short.ext"), "extendedKeyUsage=clientAuth\n");
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", at("short.key"), "-out", at("short.csr"), "-subj", `/CN=${cn}`);
    const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:T]/g, "").replace(/\.\d+Z$/, "Z");
    const notAfter = Math.floor(Date.now() / 1000 + seconds) * 1000;
    openssl("ca", "-batch", "-config", at("short.cnf"), "-cert", certs.ca, "-keyfile", at("ca.key"), "-in", at("short.csr"), "-out", at("short.pem"), "-startdate", stamp(Date.now() - 60_000), "-enddate", stamp(notAfter), "-extfile", at("short.ext"), "-notext");
    return { cert: readFileSync(at("short.pem")), key: readFileSync(at("short.key")), notAfter };
  }

  before(async function () {
    certs = makeCerts();
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: ["--tls-cert", certs.serverCert, "--tls-key", certs.serverKey, "--tls-client-ca", certs.ca] });
  });
  after(async function () {
    await server?.stop();
    await etcd?.destroy();
    certs?.remove();
  });

  it("an Observe stream opened with a certificate that expires in 3 s ends UNAUTHENTICATED at its notAfter", async () => {
    const { cert, key, notAfter } = shortLivedCert("carol", 3);
    const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url, nodeOptions: { ca: readFileSync(certs.ca), cert, key } }));
    const abort = new AbortController();
    try {
      const observe = lease.observe({ resource: uniqueResource("cert") }, { signal: abort.signal, timeoutMs: 0 });
      const end = await endOf(observe, notAfter - Date.now() + 3000);
      expect(end, "the stream is ended once the certificate expires").to.not.equal("open");
      if (end === "open") return;
      expect(end.error?.code, end.error?.message).to.equal(Code.Unauthenticated);
      expect(end.error?.rawMessage).to.match(/credentials expired at .*client certificate of "carol".*reconnect with fresh ones/);
      expect(end.at).to.be.within(notAfter - 50, notAfter + 2000);
      // The connection outlives the certificate; its next call does not.
      const unary = await failure(lease.describe({ resource: uniqueResource("cert") }));
      expect(unary.code, unary.message).to.equal(Code.Unauthenticated);
      expect(unary.rawMessage).to.match(/client certificate expired at/);
    } finally {
      abort.abort();
    }
  });
});
