// The ledger (docs/budgets.md) against a real etcd with a small quota (96 MiB) and real servers: what one
// caller did to fill etcd for everyone is refused with its budget's reason, while others go on writing.
//  - a holder Proclaiming 1 MiB values in a loop (etcd full after 77 calls before): history bytes a second;
//  - overwrites of 4 keys with 1 MiB Puts under the store quota (full after 96 Puts): history bytes a second;
//  - a principal capped at 5 leases, on one session, acquiring 98 resources with 1 MiB values (full in
//    2.3 s): bytes per lease, then the lease cap for every further session;
//  - a principal preempted five times at its cap of 5 (it could acquire nothing for 300 s): it releases
//    the preempted leases, which frees its slots at once; a preemptor allowed only `preempt` gives back
//    what it took; a resource is preempted at most once per --preemption-interval.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { TestIssuer } from "../harness/bearer.js";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { failure, sleep, uniqueResource } from "../harness/suite.js";

const MiB = 1024 * 1024;
const QUOTA = 96 * MiB;
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const infoOf = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
const reasonOf = (err: unknown) => infoOf(err)?.reason ?? `(no reason: ${ConnectError.from(err).message})`;

describe("the ledger: one caller cannot fill etcd for the others (a 96 MiB etcd)", function () {
  this.timeout(180_000);
  let etcd: TestEtcd;
  let dir: string;
  let issuer: TestIssuer;
  const servers: TestServer[] = [];
  const as = (url: string, sub: string) => issuer.as(url, sub);
  const serve = async (args: string[]) => {
    const s = await startServer({ etcd: etcd.endpoint, args: ["--etcd-quota-bytes", String(QUOTA), ...args] });
    servers.push(s);
    return s;
  };
  /** Another caller (its own connection) writes, and the server reports SERVING: etcd has room. */
  const othersGoOn = async (url: string, others = clientsFor(url)) => {
    const resource = uniqueResource("bystander");
    const { token } = await others.lease.acquire({ resource, ttl: ttl(30), holder: "bystander" });
    await others.store.put({ resource, key: "k", value: Buffer.from("still writable"), mutation: { token } });
    const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
    expect((await health.check({})).status).to.equal(ServingStatus.SERVING);
  };

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd({ quotaBackendBytes: QUOTA });
    dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-budgets-"));
    issuer = await TestIssuer.create(dir, {
      policy: {
        version: 1,
        rules: [
          { principals: ["alice", "bob"], verbs: ["acquire", "write", "read", "observe"], resources: ["*"] },
          { principals: ["pre"], verbs: ["preempt"], resources: ["*"] },
        ],
      },
    });
  });
  after(async function () {
    this.timeout(30_000);
    await Promise.all(servers.map((s) => s.stop()));
    await etcd?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Sends calls until `count` are done or one is refused for etcd's space; the refusals by reason. */
  const flood = async (count: number, call: (i: number) => Promise<unknown>) => {
    const refusals: Record<string, ConnectError[]> = {};
    let done = 0;
    for (let i = 0; i < count; i++) {
      try {
        await call(i);
        done++;
      } catch (e) {
        const reason = reasonOf(e);
        (refusals[reason] ??= []).push(ConnectError.from(e));
        if (reason === "ETCD_NO_SPACE") break;
      }
    }
    return { done, refusals };
  };

  it("a holder Proclaiming 1 MiB values in a loop is refused HISTORY_RATE_EXCEEDED, naming the budget, its size (from the quota and the compaction interval) and its use; etcd keeps room for others", async () => {
    const server = await serve([]);
    const c = clientsFor(server.url);
    const resource = uniqueResource("proclaimer");
    const { token } = await c.lease.acquire({ resource, ttl: ttl(60), holder: "leader" });
    const { done, refusals } = await flood(150, () => c.lease.proclaim({ token, value: randomBytes(MiB) }));
    expect(Object.keys(refusals), "refusals by reason").to.deep.equal(["HISTORY_RATE_EXCEEDED"]);
    expect(done, "Proclaims let in").to.be.lessThan(40);
    const e = refusals.HISTORY_RATE_EXCEEDED[0];
    expect(e.code).to.equal(Code.ResourceExhausted);
    // docs/budgets.md: quota / 2 / 32 / (2 × compaction interval of 5 s).
    const rate = String(Math.floor(QUOTA / 2 / 32 / 10));
    const meta = infoOf(e).metadata;
    expect(meta).to.include({ budget: "history_bytes_per_second", limit: rate, flag: "--max-history-bytes-per-second" });
    expect(Number(meta.used)).to.be.greaterThan(0);
    expect(Number(meta.retry_after_ms)).to.be.greaterThan(0);
    expect(e.rawMessage).to.contain("history_bytes_per_second").and.contain(`--max-history-bytes-per-second ${rate}`).and.contain(meta.used);
    await othersGoOn(server.url);
  });

  it("overwrites of 4 keys with 1 MiB Puts under the store quota are refused HISTORY_RATE_EXCEEDED once the caller's history budget is spent; etcd keeps room for others", async () => {
    const server = await serve(["--max-bytes-per-resource", String(8 * MiB)]);
    const c = clientsFor(server.url);
    const resource = uniqueResource("overwriter");
    const { token } = await c.lease.acquire({ resource, ttl: ttl(60), holder: "writer" });
    const { done, refusals } = await flood(150, (i) => c.store.put({ resource, key: `k${i % 4}`, value: randomBytes(MiB), mutation: { token } }));
    expect(Object.keys(refusals), "refusals by reason").to.deep.equal(["HISTORY_RATE_EXCEEDED"]);
    expect(done, "Puts let in").to.be.lessThan(40);
    expect(infoOf(refusals.HISTORY_RATE_EXCEEDED[0]).metadata).to.include({ budget: "history_bytes_per_second" });
    await othersGoOn(server.url);
  });

  it("a principal capped at 5 leases cannot fill etcd through one session's acquisitions: LEASE_BYTES_EXCEEDED per lease, LEASES_EXCEEDED past 5 sessions; a release gives the bytes back", async () => {
    // History budget out of the way: this is about what stays stored.
    const server = await serve([...issuer.jwtArgs, "--max-leases-per-caller", "5", "--max-history-bytes-per-second", String(1024 * MiB)]);
    const alice = await as(server.url, "alice");
    const { sessionId } = await alice.lease.openSession({ ttl: ttl(120), holder: "alice" });
    const acquireOn = (session: bigint, i: number) => alice.lease.acquire({ resource: uniqueResource(`alice-${i}`), sessionId: session, holder: "alice", value: randomBytes(MiB) });
    const one = await acquireOn(sessionId, 0);
    const first = await flood(97, (i) => acquireOn(sessionId, i + 1));
    expect(Object.keys(first.refusals), "refusals by reason").to.deep.equal(["LEASE_BYTES_EXCEEDED"]);
    expect(first.done, "1 MiB values one session may hold under 2 MiB, besides the first").to.equal(0);
    const e = first.refusals.LEASE_BYTES_EXCEEDED[0];
    expect(e.code).to.equal(Code.ResourceExhausted);
    expect(infoOf(e).metadata).to.include({ budget: "lease_bytes", limit: String(2 * MiB), flag: "--max-bytes-per-lease", lease_id: String(sessionId) });
    expect(Number(infoOf(e).metadata.used)).to.be.greaterThan(MiB);
    expect(e.rawMessage).to.contain("--max-bytes-per-lease 2097152");

    // Four more sessions: each holds what its bytes allow; the sixth lease is refused.
    for (let s = 0; s < 4; s++) {
      const { sessionId: more } = await alice.lease.openSession({ ttl: ttl(120), holder: "alice" });
      const r = await flood(3, (i) => acquireOn(more, i));
      expect(r.done).to.equal(1);
    }
    const capped = await failure(alice.lease.openSession({ ttl: ttl(120), holder: "alice" }));
    expect(reasonOf(capped)).to.equal("LEASES_EXCEEDED");
    expect(infoOf(capped).metadata).to.include({ budget: "leases", limit: "5", used: "5", principal: "alice" });
    expect(reasonOf(await failure(alice.lease.acquire({ resource: uniqueResource("own"), ttl: ttl(30), value: randomBytes(MiB) })))).to.equal("LEASES_EXCEEDED");

    // Releasing the session's acquisition gives its bytes back: another fits.
    await alice.lease.release({ token: one.token });
    await acquireOn(sessionId, 99);
    await othersGoOn(server.url, await as(server.url, "bob"));
  });

  it("a principal preempted five times at its cap of 5 releases the preempted leases (OK) and acquires again at once; the preemptor, granted only preempt, releases what it took; a resource is preempted once per --preemption-interval", async () => {
    const server = await serve([...issuer.args, "--max-leases-per-caller", "5", "--preemption-interval", "10000"]);
    const alice = await as(server.url, "alice");
    const pre = await as(server.url, "pre");
    const resources = [0, 1, 2, 3, 4].map((i) => uniqueResource(`taken-${i}`));
    const held = [];
    for (const resource of resources) held.push((await alice.lease.acquire({ resource, ttl: ttl(300), holder: "alice" })).token!);
    const taken = [];
    for (const resource of resources) taken.push((await pre.lease.acquire({ resource, ttl: ttl(300), holder: "pre", preempt: true })).token!);
    // Alice still holds five leases, all preempted: her cap is full until she gives them back.
    expect(reasonOf(await failure(alice.lease.acquire({ resource: uniqueResource("more"), ttl: ttl(30), holder: "alice" })))).to.equal("LEASES_EXCEEDED");
    for (const token of held) await alice.lease.release({ token });
    // Each release ended its lease: the slots are free at once, and a preempted lease is not renewable.
    const again = await alice.lease.acquire({ resource: uniqueResource("after"), ttl: ttl(30), holder: "alice" });
    expect(reasonOf(await failure(alice.lease.renew({ leaseId: held[0].leaseId })))).to.equal("LEASE_NOT_FOUND");
    await alice.lease.release({ token: again.token });

    // The preemptor may not acquire, but may give back what it took.
    expect((await failure(pre.lease.acquire({ resource: uniqueResource("plain"), ttl: ttl(30), holder: "pre" }))).code).to.equal(Code.PermissionDenied);
    for (const token of taken.slice(1)) await pre.lease.release({ token });
    expect((await alice.lease.describe({ resource: resources[1] })).token).to.equal(undefined);

    // resources[0] was preempted a moment ago: a second preemption waits for the interval.
    const early = await failure(pre.lease.acquire({ resource: resources[0], ttl: ttl(30), holder: "pre", preempt: true }));
    expect(early.code).to.equal(Code.ResourceExhausted);
    const meta = infoOf(early).metadata;
    expect(reasonOf(early)).to.equal("PREEMPTION_RATE_EXCEEDED");
    expect(meta).to.include({ budget: "preemptions", limit: "10000", flag: "--preemption-interval", resource: resources[0] });
    const wait = Number(meta.retry_after_ms);
    expect(wait).to.be.greaterThan(0).and.at.most(10_000);
    // Nothing changed: the preemptor's first grant still holds.
    expect((await alice.lease.describe({ resource: resources[0] })).token?.generation).to.equal(taken[0].generation);
    await sleep(wait + 50);
    const later = await pre.lease.acquire({ resource: resources[0], ttl: ttl(30), holder: "pre", preempt: true });
    expect(later.token!.generation > taken[0].generation).to.equal(true);
    await pre.lease.release({ token: later.token });
  });
});
