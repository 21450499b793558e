// Preemption (docs/preemption.md), against a real etcd, two server replicas and real holder processes:
// a paused holder preempted is refused at once in both fence modes and told PREEMPTED by whichever
// replica it renews with; a preemption racing a release or an expiry; a lock-delayed holder; waiters.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Code, ConnectError, createClient, createRouterTransport, type Client, type Interceptor } from "@connectrpc/connect";
import type { Etcd3 } from "etcd3";
import { pino } from "pino";
import { createApp, type App } from "../../server/app.js";
import { Access, CALLER } from "../../server/auth/access.js";
import { Authenticator } from "../../server/auth/authenticator.js";
import { PolicyFile } from "../../server/auth/policy-file.js";
import type { Principal } from "../../server/auth/principal.js";
import { connectEtcd } from "../../server/etcd/client.js";
import type { DomainEvent } from "../../server/events/events.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { issuerKeys, jwtConfig } from "../harness/jwt-fixtures.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { AcquireMode, FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { HolderProcess } from "../../demo/holder-process.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { ProcessClient } from "../harness/process-client.js";
import { startServer, type TestServer } from "../harness/server.js";
import { failure, sleep, uniqueResource } from "../harness/suite.js";
import { scrape } from "../operations/support/metrics.js";

const HOLDER = "test/integration/holder-process.ts";
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const reasonOf = (e: ConnectError) => e.findDetails(ErrorInfoSchema)[0];
/** How a renewal ended: "renewed", or the refusal's reason (its code without one). */
const renewal = (c: Clients, leaseId: bigint) =>
  c.lease.renew({ leaseId }).then(
    () => "renewed",
    (err) => {
      const e = ConnectError.from(err);
      return reasonOf(e)?.reason ?? Code[e.code];
    },
  );
/**
 * How the first refused renewal ended, asked through a replica until it refuses: a replica other than the
 * preempting one learns of a preemption from its watch, a few ms after the commit.
 */
async function refusedRenewal(c: Clients, leaseId: bigint): Promise<string> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const r = await renewal(c, leaseId);
    if (r !== "renewed" || Date.now() > deadline) return r;
    await sleep(20);
  }
}

describe("preemption", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let a: TestServer;
  let b: TestServer;
  let ca: Clients;
  let cb: Clients;
  const procs: ProcessClient[] = [];
  const holders: HolderProcess[] = [];

  before(async function () {
    etcd = await startEtcd();
    const prefix = `/fk-preempt-${randomBytes(4).toString("hex")}/`;
    [a, b] = await Promise.all([startServer({ etcd: etcd.endpoint, prefix }), startServer({ etcd: etcd.endpoint, prefix })]);
    ca = clientsFor(a.url);
    cb = clientsFor(b.url);
  });
  after(async function () {
    await Promise.all([a?.stop(), b?.stop()]);
    await etcd?.destroy();
  });
  afterEach(async () => {
    procs.splice(0).forEach((p) => p.kill());
    await Promise.all(holders.splice(0).map((h) => h.kill()));
  });

  it("a paused holder, preempted: refused in ORDER and LIVE before the new holder writes, and its SDK (on the other replica) reports PREEMPTED", async () => {
    const written = uniqueResource("preempt-writes");
    const told = uniqueResource("preempt-told");
    const raw = new ProcessClient(HOLDER, [a.url]);
    procs.push(raw);
    const old = BigInt((await raw.send(`acquire ${written} 30 A`)).token.generation);
    expect(await raw.send(`put ${written} doc from-A`)).to.include({ ok: true });
    const sdk = new HolderProcess(b.url, "S", told, 6000);
    holders.push(sdk);
    const acquired = await sdk.next("acquired", 15_000);

    raw.pause();
    sdk.pause();
    const p1 = await ca.lease.acquire({ resource: written, ttl: ttl(30), holder: "P", preempt: true });
    const p2 = await ca.lease.acquire({ resource: told, ttl: ttl(30), holder: "P", preempt: true });
    expect(p1.token!.generation > old).to.equal(true);
    expect(p2.token!.generation > BigInt(acquired.token.generation)).to.equal(true);
    // Nothing written by the new holder: the fence alone refuses the old one.
    const fence = (await ca.store.getFence({ resource: written })).fence;
    expect(fence > old, "the fence was raised past the old generation").to.equal(true);
    expect(fence <= p1.token!.generation).to.equal(true);
    raw.resume();
    sdk.resume();

    const order = await raw.send(`put ${written} doc late-order`);
    expect(order).to.include({ code: "FailedPrecondition", reason: "STALE_TOKEN" });
    const live = await raw.send(`put ${written} doc late-live live`);
    expect(live.code).to.equal("FailedPrecondition");
    expect(Buffer.from((await ca.store.get({ resource: written, key: "doc" })).value).toString()).to.equal("from-A");

    const lost = await sdk.next("lost", 8000);
    expect(lost).to.include({ why: "preempted", reason: "PREEMPTED", byGeneration: String(p2.token!.generation), byPrincipal: "" });
    // The new holder writes as any holder does.
    const w = await ca.store.put({ resource: written, key: "doc", value: Buffer.from("from-P"), mutation: { token: p1.token, mode: FenceMode.ORDER } });
    expect(w.commit!.fence).to.equal(p1.token!.generation);
  });

  it("the old holder's renewals answer PREEMPTED on both replicas, naming the new generation; its release answers OK and ends its lease", async () => {
    const resource = uniqueResource("preempt-renew");
    const held = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
    const p = await cb.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true });
    for (const c of [cb, ca]) {
      expect(await refusedRenewal(c, held.token!.leaseId)).to.equal("PREEMPTED");
      const e = await failure(c.lease.renew({ leaseId: held.token!.leaseId }));
      expect(e.code).to.equal(Code.FailedPrecondition);
      const info = reasonOf(e);
      expect(info.reason).to.equal("PREEMPTED");
      expect(info.metadata).to.include({ resource, generation: String(held.token!.generation), by_generation: String(p.token!.generation), by_principal: "" });
    }
    await ca.lease.release({ token: held.token });
    expect((await failure(cb.lease.renew({ leaseId: held.token!.leaseId }))).code).to.equal(Code.NotFound);
    const d = await ca.lease.describe({ resource });
    expect(d.token!.generation).to.equal(p.token!.generation);
  });

  it("waiters keep their places behind the preemptor", async () => {
    const resource = uniqueResource("preempt-line");
    const first = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
    const w1 = ca.lease.acquire({ resource, ttl: ttl(30), holder: "W1", wait: true });
    await sleep(200);
    const w2 = cb.lease.acquire({ resource, ttl: ttl(30), holder: "W2", wait: true });
    await sleep(200);
    const p = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true });
    expect(p.token!.generation > first.token!.generation).to.equal(true);
    let d = await ca.lease.describe({ resource });
    expect(d.holder).to.equal("P");
    expect(d.waiters).to.equal(2);
    await ca.lease.release({ token: p.token });
    const g1 = await w1;
    expect((await ca.lease.describe({ resource })).holder).to.equal("W1");
    await ca.lease.release({ token: g1.token });
    const g2 = await w2;
    d = await ca.lease.describe({ resource });
    expect(d.holder).to.equal("W2");
    expect(g2.token!.generation > g1.token!.generation).to.equal(true);
    await ca.lease.release({ token: g2.token });
  });

  it("a holder with a lock-delay refuses preemption: FAILED_PRECONDITION, and keeps the resource", async () => {
    const resource = uniqueResource("preempt-delay");
    const held = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "A", lockDelay: ttl(5) });
    const e = await failure(ca.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true }));
    expect(e.code).to.equal(Code.FailedPrecondition);
    expect(e.rawMessage).to.match(/lock-delay/);
    expect((await ca.lease.describe({ resource })).token!.generation).to.equal(held.token!.generation);
    expect((await ca.lease.renew({ leaseId: held.token!.leaseId })).ttl).to.not.equal(undefined);
    await ca.lease.release({ token: held.token });
  });

  it("shared holders are preempted all together by an exclusive preemptor; a shared preemptor is INVALID_ARGUMENT", async () => {
    const resource = uniqueResource("preempt-shared");
    const s1 = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "S1", mode: AcquireMode.SHARED });
    const s2 = await cb.lease.acquire({ resource, ttl: ttl(30), holder: "S2", mode: AcquireMode.SHARED });
    const refused = await failure(ca.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true, mode: AcquireMode.SHARED }));
    expect(refused.code).to.equal(Code.InvalidArgument);
    const counted = async () => (await scrape(a)).samples.find((x) => x.name === "fencekeeper_preemptions_total")?.value ?? 0;
    const before = await counted();
    const p = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true });
    expect((await counted()) - before, "fencekeeper_preemptions_total counts each holding ended").to.equal(2);
    for (const s of [s1, s2]) expect(await refusedRenewal(cb, s.token!.leaseId)).to.equal("PREEMPTED");
    const d = await ca.lease.describe({ resource });
    expect(d.holders.map((h) => h.holder)).to.deep.equal(["P"]);
    expect(d.token!.generation).to.equal(p.token!.generation);
  });

  it("a preemption racing a release: one transaction decides, and the preemptor is granted either way", async () => {
    const preemptions = async () => (await scrape(a)).samples.find((x) => x.name === "fencekeeper_preemptions_total")?.value ?? 0;
    for (let i = 0; i < 8; i++) {
      const resource = uniqueResource("preempt-race-release");
      const held = await ca.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
      const before = await preemptions();
      const [released, preempted] = await Promise.allSettled([
        cb.lease.release({ token: held.token }),
        ca.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true }),
      ]);
      expect(preempted.status, "the preemptor is granted").to.equal("fulfilled");
      const p = (preempted as PromiseFulfilledResult<Awaited<ReturnType<typeof ca.lease.acquire>>>).value;
      expect((await ca.lease.describe({ resource })).token!.generation).to.equal(p.token!.generation);
      // Which came first, as the preempting replica counted it: the preemption ended A's holding (one
      // counted), or the release did and the preemptor found the resource free (none).
      const byPreemption = (await preemptions()) - before;
      expect(byPreemption).to.be.oneOf([0, 1]);
      const renewed = await renewal(ca, held.token!.leaseId);
      if (byPreemption === 1) {
        // The release came after: it gives the preempted acquisition back (OK) and revokes A's lease, and
        // the preemption's record goes with it. A's renewal is refused: PREEMPTED while the replica still
        // holds the record, LEASE_NOT_FOUND once its watch has seen it go; never renewed.
        if (released.status === "rejected") expect((released.reason as ConnectError).code).to.equal(Code.NotFound);
        expect(renewed).to.be.oneOf(["PREEMPTED", "LEASE_NOT_FOUND"]);
      } else {
        // The release came first (its lease goes, revoked after the answer): never both holding.
        expect(released.status, "the release that came first").to.equal("fulfilled");
        expect(renewed).to.not.equal("PREEMPTED");
      }
    }
  });

  it("a preemption racing an expiry: one transaction decides, and the preemptor is granted either way", async () => {
    const outcomes = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const resource = uniqueResource("preempt-race-expiry");
      const held = await ca.lease.acquire({ resource, ttl: ttl(2), holder: "A" });
      // Around the moment etcd lets the lease go (2 s, checked every 500 ms).
      await sleep(1600 + i * 150);
      const p = await cb.lease.acquire({ resource, ttl: ttl(30), holder: "P", preempt: true });
      expect((await ca.lease.describe({ resource })).token!.generation).to.equal(p.token!.generation);
      const renewed = await refusedRenewal(ca, held.token!.leaseId);
      outcomes.add(renewed);
      expect(["PREEMPTED", "LEASE_NOT_FOUND"]).to.include(renewed);
    }
    expect(outcomes.has("PREEMPTED"), "at least one preemption came before the expiry").to.equal(true);
  });
});

describe("preemption under a policy", function () {
  this.timeout(60_000);
  let dir: string;
  let etcd: TestEtcd;
  let client: Etcd3;
  let app: App;
  let lease: Client<typeof LeaseService>;
  const events: DomainEvent[] = [];
  const person = (name: string, groups: string[] = []): Principal => ({ name, via: "jwt", groups, claims: {} });
  const people = new Map([person("alice"), person("mallory"), person("otto"), person("pia"), person("sam", ["sre"])].map((p) => [p.name, p]));
  let policyPath: string;
  let policyFile: PolicyFile;
  const rules = [
    { principals: ["alice", "mallory", "otto"], verbs: ["acquire", "write"], resources: ["jobs/*"] },
    { principals: ["otto", "pia"], verbs: ["preempt"], resources: ["jobs/*"] },
    { groups: ["sre"], verbs: ["admin"], resources: ["*"] },
  ];
  const as = (name: string) => ({ headers: { "x-test-caller": name } });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-preemption-"));
    const keys = await issuerKeys(dir);
    policyPath = join(dir, "policy.json");
    writeFileSync(policyPath, JSON.stringify({ version: 1, rules }));
    const log = pino({ level: "silent" });
    policyFile = await PolicyFile.load(policyPath, log);
    policyFile.watch();
    const access = new Access(await Authenticator.create({ mtls: false, jwt: jwtConfig([keys.pemFile]) }), policyFile);
    etcd = await startEtcd();
    client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: 5000 });
    app = createApp({
      etcd: client,
      access,
      callerCaps: { streams: 100, waiters: 100, streamMessagesPerSecond: 1000 },
      prefix: `/preemption-policy-${process.pid}/`,
      // One resource preempted twice in a row, on purpose: the interval is tested in budgets.test.ts.
      limits: { preemptionIntervalMs: 0 },
      etcdLimits: { maxTxnOps: 128, maxRequestBytes: 1536 * 1024 },
      etcdTimeoutMs: 5000,
      log,
    });
    app.events.on((e) => events.push(e));
    const caller: Interceptor = (next) => (req) => {
      req.contextValues.set(CALLER, people.get(req.header.get("x-test-caller") ?? "")!);
      return next(req);
    };
    lease = createClient(LeaseService, createRouterTransport((router) => app.routes(router), { router: { interceptors: [caller] } }));
  });
  after(async () => {
    app?.close();
    policyFile?.close();
    client?.close();
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a caller without preempt is PERMISSION_DENIED (acquire is not enough); preempt or admin may, and the old holder is told by whom", async () => {
    const resource = `jobs/${uniqueResource("policy")}`;
    const held = await lease.acquire({ resource, ttl: ttl(30), holder: "alice-1" }, as("alice"));
    const denied = await failure(lease.acquire({ resource, ttl: ttl(30), holder: "mallory-1", preempt: true }, as("mallory")));
    expect(denied.code).to.equal(Code.PermissionDenied);
    expect(reasonOf(denied).metadata).to.include({ verb: "preempt", principal: "mallory", resource });
    expect((await lease.renew({ leaseId: held.token!.leaseId }, as("alice"))).ttl).to.not.equal(undefined);

    const byOtto = await lease.acquire({ resource, ttl: ttl(30), holder: "otto-1", preempt: true }, as("otto"));
    const told = await failure(lease.renew({ leaseId: held.token!.leaseId }, as("alice")));
    expect(reasonOf(told)).to.deep.include({ reason: "PREEMPTED" });
    expect(reasonOf(told).metadata).to.include({ by_principal: "otto", by_generation: String(byOtto.token!.generation) });

    const bySam = await lease.acquire({ resource, ttl: ttl(30), holder: "sam-1", preempt: true }, as("sam"));
    expect(reasonOf(await failure(lease.renew({ leaseId: byOtto.token!.leaseId }, as("otto")))).metadata).to.include({ by_principal: "sam" });
    const preempted = events.filter((e): e is Extract<DomainEvent, { type: "preempted" }> => e.type === "preempted" && e.resource === resource);
    expect(preempted.map((e) => [e.generation, e.leaseId, e.byGeneration, e.byPrincipal])).to.deep.equal([
      [held.token!.generation, held.token!.leaseId, byOtto.token!.generation, "otto"],
      [byOtto.token!.generation, byOtto.token!.leaseId, bySam.token!.generation, "sam"],
    ]);
  });

  it("a principal granted preempt alone keeps the lease it took renewable after a policy reload", async () => {
    const resource = `jobs/${uniqueResource("preempt-only")}`;
    await lease.acquire({ resource, ttl: ttl(30), holder: "alice-2" }, as("alice"));
    const taken = await lease.acquire({ resource, ttl: ttl(30), holder: "pia-1", preempt: true }, as("pia"));
    // A reload (any change of the file) makes renewals ask the policy again what the lease holds.
    writeFileSync(policyPath, JSON.stringify({ version: 1, rules: [...rules, { principals: ["nobody"], verbs: ["read"], resources: ["x"] }] }));
    await sleep(800);
    expect((await lease.renew({ leaseId: taken.token!.leaseId }, as("pia"))).ttl).to.not.equal(undefined);
  });
});
