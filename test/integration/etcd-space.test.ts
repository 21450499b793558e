// Issue 20, finding 5: one writer could fill etcd for everyone. Nothing compacted etcd, the store had no
// quota, etcd's NOSPACE was answered as "etcd's answer is too large", and health stayed SERVING. Each
// test drives a writer through a real client against a real etcd started with a small
// --quota-backend-bytes.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { eventually, failure, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const KiB = 1024;
const MiB = 1024 * KiB;

// These tests are of what stands behind the ledger (the store quota, compaction, etcd's own quota): the
// history budget, which would refuse these writers first (docs/budgets.md), is off.
const NO_HISTORY_BUDGET = ["--max-history-bytes-per-second", "0"];

const infoOf = (err: unknown) => ConnectError.from(err).findDetails(ErrorInfoSchema)[0];

describe("etcd kept from filling (issue 20, finding 5)", function () {
  this.timeout(120_000);

  describe("a quota on the bytes each resource stores (--max-bytes-per-resource 4 MiB)", () => {
    const LIMIT = 4 * MiB;
    let etcd: TestEtcd;
    let servers: TestServer[] = [];
    let c: Clients[] = [];

    before(async function () {
      this.timeout(60_000);
      // Room for well over the quota, so that the quota is what stops the writer, not etcd.
      etcd = await startEtcd({ quotaBackendBytes: 256 * MiB });
      const prefix = `/fk-quota-${randomBytes(4).toString("hex")}/`;
      // Two replicas on one prefix: the quota holds across them.
      servers = await Promise.all([0, 1].map(() => startServer({ etcd: etcd.endpoint, prefix, args: ["--max-bytes-per-resource", String(LIMIT), ...NO_HISTORY_BUDGET] })));
      c = servers.map((s) => clientsFor(s.url));
    });
    after(async function () {
      this.timeout(30_000);
      await Promise.all(servers.map((s) => s.stop()));
      await etcd?.destroy();
    });

    it("a writer of 512 KiB values is refused QUOTA_EXCEEDED at the quota, naming the resource, its usage and the limit; overwrites count once, deletes free, other resources go on", async () => {
      const resource = uniqueResource("quota");
      const token = (await c[0].lease.acquire({ resource, ttl: ttl(60) })).token!;
      const value = (n = 512 * KiB) => randomBytes(n);
      const entry = 2 + 512 * KiB; // key "kN" and its value
      let written = 0;
      let refusal: Awaited<ReturnType<typeof failure>> | undefined;
      for (let i = 0; i < 10 && !refusal; i++) {
        try {
          await c[i % 2].store.put({ resource, key: `k${i}`, value: value(), mutation: { token } });
          written++;
        } catch (e) {
          refusal = await failure(Promise.reject(e));
        }
      }
      expect(written, "entries written before the quota").to.equal(Math.floor(LIMIT / entry));
      expect(refusal, "the write past the quota is refused").to.not.equal(undefined);
      expect(Code[refusal!.code], refusal!.message).to.equal("ResourceExhausted");
      const info = infoOf(refusal!);
      expect(info.reason).to.equal("QUOTA_EXCEEDED");
      expect(info.metadata).to.deep.equal({ resource, usage: String(written * entry), delta: String(entry), limit: String(LIMIT) });
      expect(refusal!.message).to.contain(resource).and.contain(String(LIMIT)).and.contain(String(written * entry));
      // Nothing of the refused write is there.
      expect((await c[0].store.get({ resource, key: `k${written}` })).found).to.equal(false);

      // Rewriting an entry with a value of the same size adds nothing; a larger one (by more than the
      // room left) is refused.
      await c[1].store.put({ resource, key: "k0", value: value(), mutation: { token } });
      const larger = await failure(c[0].store.put({ resource, key: "k0", value: value(MiB), mutation: { token } }));
      expect(infoOf(larger).reason).to.equal("QUOTA_EXCEEDED");
      // A delete frees its entry's bytes, and the next write fits.
      await c[0].store.delete({ resource, key: "k1", mutation: { token } });
      await c[1].store.put({ resource, key: `k${written}`, value: value(), mutation: { token } });
      // Another resource has a quota of its own.
      const other = uniqueResource("quota-other");
      const otherToken = (await c[1].lease.acquire({ resource: other, ttl: ttl(60) })).token!;
      await c[1].store.put({ resource: other, key: "k0", value: value(), mutation: { token: otherToken } });
    });

    it("20 concurrent writers on two replicas cannot pass the quota together: exactly as many commit as fit", async () => {
      const resource = uniqueResource("quota-race");
      const token = (await c[0].lease.acquire({ resource, ttl: ttl(60) })).token!;
      const entry = 3 + 512 * KiB; // keys "kNN"
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          c[i % 2].store.put({ resource, key: `k${String(i).padStart(2, "0")}`, value: randomBytes(512 * KiB), mutation: { token } }).then(
            () => "ok",
            (e) => infoOf(e)?.reason ?? String(e),
          ),
        ),
      );
      expect(outcomes.filter((o) => o === "ok").length, outcomes.join(", ")).to.equal(Math.floor(LIMIT / entry));
      expect(outcomes.filter((o) => o !== "ok").every((o) => o === "QUOTA_EXCEEDED"), outcomes.join(", ")).to.equal(true);
      const stored = (await c[1].store.range({ resource, keysOnly: true })).entries.length;
      expect(stored).to.equal(Math.floor(LIMIT / entry));
    });
  });

  describe("with the quota off, a writer that fills etcd (--quota-backend-bytes 16 MiB)", () => {
    let etcd: TestEtcd;
    let server: TestServer;
    let c: Clients;

    before(async function () {
      this.timeout(60_000);
      etcd = await startEtcd({ quotaBackendBytes: 16 * MiB });
      server = await startServer({
        etcd: etcd.endpoint,
        args: ["--max-bytes-per-resource", "0", "--compaction-interval", "0", "--health-probe-interval", "200", ...NO_HISTORY_BUDGET],
      });
      c = clientsFor(server.url);
    });
    after(async function () {
      this.timeout(30_000);
      await server?.stop();
      await etcd?.destroy();
    });

    it("is refused RESOURCE_EXHAUSTED ETCD_NO_SPACE saying what to do (not 'too large'), and health turns NOT_SERVING", async () => {
      const health = createClient(Health, createGrpcTransport({ baseUrl: server.url }));
      expect((await health.check({ service: "" })).status).to.equal(ServingStatus.SERVING);
      const resource = uniqueResource("fill");
      const token = (await c.lease.acquire({ resource, ttl: ttl(60) })).token!;
      let refusal: Awaited<ReturnType<typeof failure>> | undefined;
      for (let i = 0; i < 64 && !refusal; i++) {
        try {
          await c.store.put({ resource, key: `k${i}`, value: randomBytes(MiB), mutation: { token } });
        } catch (e) {
          refusal = await failure(Promise.reject(e));
        }
      }
      expect(refusal, "64 MiB written into a 16 MiB etcd").to.not.equal(undefined);
      expect(Code[refusal!.code], refusal!.message).to.equal("ResourceExhausted");
      expect(infoOf(refusal!)?.reason, refusal!.message).to.equal("ETCD_NO_SPACE");
      expect(refusal!.message).to.not.contain("too large");
      expect(refusal!.message).to.contain("alarm disarm").and.contain("--quota-backend-bytes");
      // Every write is refused the same way, an Acquire too (its lease grant).
      const acquire = await failure(c.lease.acquire({ resource: uniqueResource("after"), ttl: ttl(60) }));
      expect(infoOf(acquire)?.reason, acquire.message).to.equal("ETCD_NO_SPACE");
      await eventually(async () => (await health.check({ service: "" })).status === ServingStatus.NOT_SERVING, "health NOT_SERVING", 5000);
      expect((await health.check({ service: "liveness" })).status).to.equal(ServingStatus.SERVING);
    });
  });

  describe("compaction (--compaction-interval 200 ms, --compaction-retention 10)", () => {
    let etcd: TestEtcd;
    let server: TestServer;
    let c: Clients;

    before(async function () {
      this.timeout(60_000);
      etcd = await startEtcd();
      server = await startServer({ etcd: etcd.endpoint, args: ["--compaction-interval", "200", "--compaction-retention", "10"] });
      c = clientsFor(server.url);
    });
    after(async function () {
      this.timeout(30_000);
      await server?.stop();
      await etcd?.destroy();
    });

    it("keeps etcd's history bounded: a page token's revision is compacted once it is older than the retention and an interval", async () => {
      const resource = uniqueResource("compact");
      const token = (await c.lease.acquire({ resource, ttl: ttl(60) })).token!;
      for (const k of ["a", "b", "c"]) await c.store.put({ resource, key: k, value: Buffer.from(k), mutation: { token } });
      const first = await c.store.range({ resource, pageSize: 1 });
      // Still readable right away: the retention and one interval protect it.
      expect((await c.store.range({ resource, pageSize: 1, pageToken: first.nextPageToken })).entries.map((e) => e.key)).to.deep.equal(["b"]);
      for (let i = 0; i < 30; i++) await c.store.put({ resource, key: "counter", value: Buffer.from(String(i)), mutation: { token } });
      await eventually(
        async () => {
          try {
            await c.store.range({ resource, pageSize: 1, pageToken: first.nextPageToken });
            return false;
          } catch (e) {
            const err = await failure(Promise.reject(e));
            expect(infoOf(err)?.reason, err.message).to.equal("REVISION_COMPACTED");
            return true;
          }
        },
        "the old snapshot compacted",
        5000,
      );
      // The current state is intact.
      expect((await c.store.range({ resource })).entries.map((e) => e.key)).to.deep.equal(["a", "b", "c", "counter"]);
    });
  });

  describe("compaction against a writer that rewrites one key with 1 MiB values (--quota-backend-bytes 32 MiB)", () => {
    /** On an etcd of its own, rewrites one key n times with 1 MiB; the first refusal's reason, or undefined. */
    async function rewrite(args: string[], n: number): Promise<string | undefined> {
      const etcd = await startEtcd({ quotaBackendBytes: 32 * MiB });
      const server = await startServer({ etcd: etcd.endpoint, args: [...args, ...NO_HISTORY_BUDGET] }).catch(async (e) => {
        await etcd.destroy();
        throw e;
      });
      try {
        const c = clientsFor(server.url);
        const resource = uniqueResource("rewrite");
        const token = (await c.lease.acquire({ resource, ttl: ttl(60) })).token!;
        for (let i = 0; i < n; i++) {
          try {
            await c.store.put({ resource, key: "k", value: randomBytes(MiB), mutation: { token } });
          } catch (e) {
            return infoOf(e)?.reason ?? String(e);
          }
        }
        return undefined;
      } finally {
        await server.stop();
        await etcd.destroy();
      }
    }

    it("with compaction on, 100 rewrites (100 MiB of history) never fill it; the same writer with compaction off fills it", async () => {
      // Compacted every 100 ms down to 5 revisions: at most a few MiB of history stand between compactions
      // even when the writer outruns a loaded machine's compactor (a write needs no read of the entry it
      // replaces once the server knows the resource's usage).
      expect(await rewrite(["--compaction-interval", "100", "--compaction-retention", "5"], 100), "with compaction").to.equal(undefined);
      expect(await rewrite(["--compaction-interval", "0"], 100), "without compaction").to.equal("ETCD_NO_SPACE");
    });
  });
});
