// The audit trail (issue 25, part 2), against real etcd and real server processes: two replicas, each
// writing its own decisions to its own --audit-log, for a scripted scenario that goes through every kind
// of line; nothing secret in either file; and a sink that cannot be written (/dev/full) stops no call.
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exportSPKI, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, uniqueResource } from "../harness/suite.js";
import { scrape } from "./support/metrics.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const ISSUER = "https://issuer.test";
const AUDIENCE = "fencekeeper";
/** In a value written to the store, and in a bearer token the server refuses: never in an audit line. */
const SECRET_VALUE = "SECRET-VALUE-7f3a9c";
const SECRET_BEARER = "SECRET-BEARER-1d8e44";

type Line = Record<string, unknown>;

function readLines(file: string): Line[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Line);
}

describe("the audit trail (--audit-log)", function () {
  this.timeout(120_000);
  let etcd: TestEtcd;
  let dir: string;
  const servers: TestServer[] = [];
  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-audit-"));
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("a scripted scenario on two replicas", () => {
    let key: CryptoKey;
    let a: TestServer;
    let b: TestServer;
    const fileA = () => join(dir, "a.audit.jsonl");
    const fileB = () => join(dir, "b.audit.jsonl");
    const jwts: string[] = [];

    const jwt = async (sub: string) => {
      const t = await new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject(sub).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt().setExpirationTime("10m").sign(key);
      jwts.push(t);
      return t;
    };
    const clientsAs = (server: TestServer, bearer: string | undefined) => {
      const auth: Interceptor = (next) => (req) => {
        if (bearer) req.header.set("authorization", `Bearer ${bearer}`);
        return next(req);
      };
      const transport = createGrpcTransport({ baseUrl: server.url, interceptors: [auth] });
      return { lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) };
    };
    const id = (requestId: string) => ({ headers: { "x-request-id": requestId } });

    before(async function () {
      this.timeout(60_000);
      const pair = await generateKeyPair("ES256");
      key = pair.privateKey;
      writeFileSync(join(dir, "jwt.pem"), await exportSPKI(pair.publicKey));
      const policy = join(dir, "policy.json");
      writeFileSync(
        policy,
        JSON.stringify({
          version: 1,
          rules: [
            { principals: ["alice", "bob"], verbs: ["acquire", "write", "read", "observe"], resources: ["audit/*"] },
            { principals: ["mallory"], verbs: ["observe"], resources: ["audit/*"] },
          ],
        }),
      );
      const auth = ["--jwt-keys", join(dir, "jwt.pem"), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--policy", policy];
      // One state (one prefix) served by two replicas; b serves every call through connect-node.
      const prefix = `/fk-test-audit-${process.pid}/`;
      a = await startServer({ etcd: etcd.endpoint, prefix, args: [...auth, "--audit-log", fileA(), "--replica", "replica-a"] });
      servers.push(a);
      b = await startServer({ etcd: etcd.endpoint, prefix, args: [...auth, "--audit-log", fileB(), "--replica", "replica-b", "--unary-fast-path", "off"] });
      servers.push(b);
    });

    it("each replica's file holds exactly its own decisions, with who, from where, on what, under which request id; nothing secret", async () => {
      const aliceA = clientsAs(a, await jwt("alice"));
      const bobB = clientsAs(b, await jwt("bob"));
      const bobA = clientsAs(a, await jwt("bob"));
      const malloryA = clientsAs(a, await jwt("mallory"));
      const strangerA = clientsAs(a, SECRET_BEARER);
      const strangerB = clientsAs(b, SECRET_BEARER);
      const r1 = uniqueResource("audit/r1");
      const r2 = uniqueResource("audit/r2");

      // Acquired on a; a refused acquire on b; renewed by its holder (no line), and by bob (NOT_HOLDER).
      const t1 = (await aliceA.lease.acquire({ resource: r1, ttl: ttl(30), holder: "alice-worker" }, id("acquire-1"))).token!;
      expect((await failure(bobB.lease.acquire({ resource: r1, ttl: ttl(30), holder: "bob-worker" }, id("acquire-held")))).code).to.equal(Code.Aborted);
      await aliceA.lease.renew({ leaseId: t1.leaseId }, id("renew-own"));
      expect((await failure(bobA.lease.renew({ leaseId: t1.leaseId }, id("renew-other")))).code).to.equal(Code.PermissionDenied);
      await aliceA.store.put({ resource: r1, key: "k", value: new TextEncoder().encode(SECRET_VALUE), mutation: { token: t1 } }, id("put-1"));
      // Released on a; taken over by bob on b, who writes; alice's write under the old generation is stale.
      await aliceA.lease.release({ token: t1 }, id("release-1"));
      const t2 = (await bobB.lease.acquire({ resource: r1, ttl: ttl(30), holder: "bob-worker" }, id("acquire-2"))).token!;
      await bobB.store.put({ resource: r1, key: "k", value: new TextEncoder().encode(SECRET_VALUE), mutation: { token: t2 } }, id("put-2"));
      expect((await failure(aliceA.store.put({ resource: r1, key: "k", value: new TextEncoder().encode(SECRET_VALUE), mutation: { token: t1 } }, id("put-stale")))).code).to.equal(
        Code.FailedPrecondition,
      );
      // Denied by the policy, not authenticated, a forged signature.
      expect((await failure(malloryA.lease.acquire({ resource: r1, ttl: ttl(30), holder: "m" }, id("acquire-denied")))).code).to.equal(Code.PermissionDenied);
      // (Each replica: a refused its caller on the unary fast path, b in connect-node's interceptors.)
      expect((await failure(strangerA.store.put({ resource: r1, key: "k", value: new Uint8Array([1]), mutation: { token: t1 } }, id("put-stranger")))).code).to.equal(Code.Unauthenticated);
      expect((await failure(strangerB.lease.acquire({ resource: r1, ttl: ttl(30), holder: "s" }, id("acquire-stranger")))).code).to.equal(Code.Unauthenticated);
      const forged: FencingToken = { ...t2, signature: t2.signature.map((byte, i) => (i === 0 ? byte ^ 1 : byte)) };
      expect((await failure(bobA.store.put({ resource: r1, key: "k", value: new TextEncoder().encode(SECRET_VALUE), mutation: { token: forged } }, id("put-forged")))).code).to.equal(
        Code.InvalidArgument,
      );
      // A Batch whose writes are decided each on its own: one stale, one denied by the policy (each line with its generation).
      const put = (resource: string, token: FencingToken) => ({ write: { case: "put" as const, value: { resource, key: "b", value: new TextEncoder().encode(SECRET_VALUE), mutation: { token } } } });
      const { results } = await aliceA.store.batch({ writes: [put(r1, t1), put("elsewhere/x", t1)] }, id("batch-mixed"));
      expect(results.map((r) => r.result.case)).to.deep.equal(["error", "error"]);
      // And one refused for its token's principal: bob writes under his own token, and under alice's.
      const { results: bobs } = await bobA.store.batch({ writes: [put(r1, t2), put(r1, t1)] }, id("batch-not-holder"));
      expect(bobs.map((r) => r.result.case)).to.deep.equal(["commit", "error"]);
      await bobB.lease.release({ token: t2 }, id("release-2"));
      // A session on b, with an acquisition on it.
      const { sessionId } = await bobB.lease.openSession({ ttl: ttl(30), holder: "bob-session" }, id("session-open"));
      const t3 = (await bobB.lease.acquire({ resource: r2, holder: "bob-session", sessionId }, id("acquire-session"))).token!;
      await bobB.lease.closeSession({ sessionId }, id("session-close"));

      // The drain at shutdown writes what is queued.
      expect(await a.stop()).to.equal(0);
      expect(await b.stop()).to.equal(0);
      const linesA = readLines(fileA());
      const linesB = readLines(fileB());

      // Every line: its time and replica; a call's, its client's address.
      for (const [lines, replica] of [[linesA, "replica-a"], [linesB, "replica-b"]] as const) {
        for (const l of lines) {
          expect(l.replica).to.equal(replica);
          expect(Date.parse(l.time as string), String(l.time)).to.be.within(Date.now() - 120_000, Date.now());
          if (l.requestId !== undefined) expect(l.address, JSON.stringify(l)).to.match(/^127\.0\.0\.1:\d+$/);
        }
      }
      // The same token signing keys on both (kept in etcd), named by id.
      const signingKeys = (lines: Line[]) => lines.find((l) => l.keys === "token signing")?.keyIds as string[];
      expect(signingKeys(linesA)).to.have.length(1).and.deep.equal(signingKeys(linesB));
      expect(signingKeys(linesA)[0]).to.equal(t1.keyId);

      // Ids made by etcd are named by what they are.
      const names = new Map<string, string>([
        [String(t1.generation), "<gen1>"],
        [String(t1.leaseId), "<lease1>"],
        [String(t2.generation), "<gen2>"],
        [String(t2.leaseId), "<lease2>"],
        [String(t3.generation), "<gen3>"],
        [String(sessionId), "<session>"],
      ]);
      const shape = (l: Line) => {
        const { time: _t, replica: _r, address: _a, ...rest } = l;
        const out: Line = {};
        for (const [k, v] of Object.entries(rest)) out[k] = k === "keyIds" ? "<ids>" : typeof v === "string" && names.has(v) ? names.get(v) : v;
        return out;
      };
      const L = "fencekeeper.v1.LeaseService/";
      const S = "fencekeeper.v1.FencedStoreService/";
      expect(linesA.map(shape)).to.deep.equal([
        { kind: "keys loaded", keys: "jwt verification", keyIds: "<ids>", keyCount: 1, trigger: "startup" },
        { kind: "keys loaded", keys: "token signing", keyIds: "<ids>", keyCount: 1, trigger: "startup" },
        { kind: "granted", requestId: "acquire-1", rpc: `${L}Acquire`, principal: "alice", resource: r1, generation: "<gen1>", lease: "<lease1>", mode: "exclusive" },
        { kind: "refused", requestId: "renew-other", rpc: `${L}Renew`, principal: "bob", reason: "NOT_HOLDER", lease: "<lease1>" },
        { kind: "released", requestId: "release-1", rpc: `${L}Release`, principal: "alice", resource: r1, generation: "<gen1>", lease: "<lease1>" },
        { kind: "refused", requestId: "put-stale", rpc: `${S}Put`, principal: "alice", reason: "STALE_TOKEN", operation: "put", resource: r1, generation: "<gen1>" },
        { kind: "refused", requestId: "acquire-denied", rpc: `${L}Acquire`, principal: "mallory", reason: "PERMISSION_DENIED", resource: r1 },
        { kind: "refused", requestId: "put-stranger", rpc: `${S}Put`, reason: "UNAUTHENTICATED" },
        { kind: "refused", requestId: "put-forged", rpc: `${S}Put`, principal: "bob", reason: "TOKEN_SIGNATURE_INVALID", operation: "put", resource: r1, generation: "<gen2>" },
        // The policy's refusal is decided first (before the write reaches etcd), and written first.
        { kind: "refused", requestId: "batch-mixed", rpc: `${S}Batch`, principal: "alice", reason: "PERMISSION_DENIED", operation: "put", resource: "elsewhere/x", generation: "<gen1>" },
        { kind: "refused", requestId: "batch-mixed", rpc: `${S}Batch`, principal: "alice", reason: "STALE_TOKEN", operation: "put", resource: r1, generation: "<gen1>" },
        { kind: "refused", requestId: "batch-not-holder", rpc: `${S}Batch`, principal: "bob", reason: "NOT_HOLDER", operation: "put", resource: r1, generation: "<gen1>" },
      ]);
      expect(linesB.map(shape)).to.deep.equal([
        { kind: "keys loaded", keys: "jwt verification", keyIds: "<ids>", keyCount: 1, trigger: "startup" },
        { kind: "keys loaded", keys: "token signing", keyIds: "<ids>", keyCount: 1, trigger: "startup" },
        { kind: "refused", requestId: "acquire-held", rpc: `${L}Acquire`, principal: "bob", reason: "RESOURCE_HELD", operation: "acquire", resource: r1, generation: "<gen1>", lease: "<lease1>" },
        { kind: "granted", requestId: "acquire-2", rpc: `${L}Acquire`, principal: "bob", resource: r1, generation: "<gen2>", lease: "<lease2>", mode: "exclusive" },
        { kind: "refused", requestId: "acquire-stranger", rpc: `${L}Acquire`, reason: "UNAUTHENTICATED" },
        { kind: "released", requestId: "release-2", rpc: `${L}Release`, principal: "bob", resource: r1, generation: "<gen2>", lease: "<lease2>" },
        { kind: "session opened", requestId: "session-open", rpc: `${L}OpenSession`, principal: "bob", session: "<session>", lease: "<session>" },
        { kind: "granted", requestId: "acquire-session", rpc: `${L}Acquire`, principal: "bob", resource: r2, generation: "<gen3>", lease: "<session>", session: "<session>", mode: "exclusive" },
        { kind: "session closed", requestId: "session-close", rpc: `${L}CloseSession`, principal: "bob", session: "<session>", lease: "<session>" },
      ]);

      // Nothing secret: no value, no token signature (in any encoding), no bearer token or any part of one.
      const both = readFileSync(fileA(), "utf8") + readFileSync(fileB(), "utf8");
      const secrets = [SECRET_VALUE, SECRET_BEARER, ...jwts, ...jwts.flatMap((t) => t.split("."))];
      for (const t of [t1, t2, t3, forged]) {
        const sig = Buffer.from(t.signature);
        secrets.push(sig.toString("base64"), sig.toString("base64url"), sig.toString("hex"));
      }
      for (const s of secrets) expect(both.includes(s), `the audit files contain ${s.slice(0, 20)}...`).to.equal(false);
    });
  });

  it("--audit-log /dev/full: every call goes on, within a bound no disk decides, the dropped lines are counted, and the server stops cleanly", async () => {
    const server = await startServer({ etcd: etcd.endpoint, args: ["--audit-log", "/dev/full"] });
    servers.push(server);
    const transport = createGrpcTransport({ baseUrl: server.url });
    const lease = createClient(LeaseService, transport);
    const started = Date.now();
    let done = 0;
    for (let wave = 0; wave < 10; wave++) {
      await Promise.all(
        Array.from({ length: 30 }, async () => {
          const { token } = await lease.acquire({ resource: uniqueResource("audit/full"), ttl: ttl(10), holder: "h" });
          await lease.release({ token });
          done++;
        }),
      );
    }
    expect(done).to.equal(300);
    expect(Date.now() - started, "300 acquisitions and releases, on a loaded machine").to.be.below(60_000);
    const m = await scrape(server);
    // A granted and a released line per pair, at least (and the token signing keys' at startup).
    expect(m.value("fencekeeper_audit_dropped_total")).to.be.at.least(600);
    expect(m.value("fencekeeper_audit_written_total")).to.equal(0);
    expect(server.logs.some((l) => l.includes("audit lines dropped"))).to.equal(true);
    expect(await server.stop()).to.equal(0);
  });

  it("SIGHUP opens the file again by its path: after a rotation that renamed it, lines go to the new file", async () => {
    const file = join(dir, "rotated.audit.jsonl");
    const server = await startServer({ etcd: etcd.endpoint, args: ["--audit-log", file] });
    servers.push(server);
    const lease = createClient(LeaseService, createGrpcTransport({ baseUrl: server.url }));
    const before = uniqueResource("audit/rotate");
    await lease.acquire({ resource: before, ttl: ttl(10), holder: "h" });
    await eventually(() => existsSync(file) && readLines(file).some((l) => l.resource === before), "the first line is written");
    renameSync(file, `${file}.1`);
    server.process.kill("SIGHUP");
    await eventually(() => existsSync(file), "the file is opened again (the keys loaded on SIGHUP are written to it)");
    const after = uniqueResource("audit/rotate");
    await lease.acquire({ resource: after, ttl: ttl(10), holder: "h" });
    expect(await server.stop()).to.equal(0);
    const old = readLines(`${file}.1`);
    const fresh = readLines(file);
    expect(old.filter((l) => l.kind === "granted").map((l) => l.resource)).to.deep.equal([before]);
    expect(fresh.map((l) => [l.kind, l.resource ?? l.trigger])).to.deep.equal([
      ["keys loaded", "SIGHUP"],
      ["granted", after],
    ]);
  });

  it("--audit-log -: the lines go to standard output beside the log", async () => {
    const server = await startServer({ etcd: etcd.endpoint, args: ["--audit-log", "-", "--replica", "stdout-replica"] });
    servers.push(server);
    const resource = uniqueResource("audit/stdout");
    const { token } = await createClient(LeaseService, createGrpcTransport({ baseUrl: server.url })).acquire({ resource, ttl: ttl(10), holder: "h" });
    expect(await server.stop()).to.equal(0);
    const granted = server.logs.map((l) => JSON.parse(l) as Line).find((l) => l.kind === "granted" && l.resource === resource);
    expect(granted).to.deep.include({ replica: "stdout-replica", generation: String(token!.generation), mode: "exclusive" });
  });
});
