// The Prometheus endpoint: it parses as the text format, and its counters and gauges move with what
// clients do and with what etcd does.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { KeepAliveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { metricsUrl, scrape } from "./support/metrics.js";
import { startMeshServer } from "./support/mesh-server.js";
import { AsyncQueue } from "../../client/async-queue.js";
import { collect } from "./support/collect.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const LEASE = "fencekeeper.v1.LeaseService";
const handled = (method: string, code: string, service = LEASE) => ["grpc_server_handled_total", { grpc_service: service, grpc_method: method, grpc_code: code }] as const;

describe("metrics", () => {
  let etcd: TestEtcd;
  let server: TestServer;
  let c: Clients;

  before(async () => {
    etcd = await startEtcd();
    server = await startMeshServer({ etcd: etcd.endpoint });
    c = clientsFor(server.url);
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });

  it("serves the Prometheus text format on its own port, with Node's process metrics", async () => {
    expect(new URL(metricsUrl(server)).port).to.not.equal(new URL(server.url).port);
    const m = await scrape(server);
    expect(m.types.get("grpc_server_handled_total")).to.equal("counter");
    expect(m.types.get("grpc_server_handling_seconds")).to.equal("histogram");
    expect(m.types.get("fencekeeper_leases_held")).to.equal("gauge");
    expect(m.types.get("fencekeeper_etcd_request_duration_seconds")).to.equal("histogram");
    expect(m.value("process_resident_memory_bytes")).to.be.greaterThan(0);
    expect(m.value("fencekeeper_serving")).to.equal(1);
    expect(m.value("fencekeeper_etcd_reachable")).to.equal(1);
    const other = await fetch(metricsUrl(server).replace("/metrics", "/other"));
    expect(other.status).to.equal(404);
  });

  it("counts calls by method and code, leases held, waiters, KeepAlive streams and renewals, and refused writes", async () => {
    const before = await scrape(server);
    const r1 = uniqueResource("metrics");
    const r2 = uniqueResource("metrics");

    const first = await c.lease.acquire({ resource: r1, ttl: ttl(10), holder: "one" });
    const other = await c.lease.acquire({ resource: r2, ttl: ttl(10), holder: "two" });
    const held = await c.lease.acquire({ resource: r1, ttl: ttl(10), holder: "three" }).catch((e) => e);
    expect((held as ConnectError).code).to.equal(Code.Aborted);
    const waiter = c.lease.acquire({ resource: r1, ttl: ttl(10), holder: "waiter", wait: true });
    await eventually(async () => (await scrape(server)).value("fencekeeper_acquire_waiting") === 1, "one caller waiting");

    const requests = new AsyncQueue<MessageInitShape<typeof KeepAliveRequestSchema>>();
    const keepAlive = collect(c.lease.keepAlive(requests));
    requests.push({ leaseId: other.token!.leaseId });
    requests.push({ leaseId: 12345n });
    await eventually(() => keepAlive.items.length === 2, "two KeepAlive answers");
    const during = await scrape(server);
    expect(during.value("fencekeeper_streams_open", { grpc_service: LEASE, grpc_method: "KeepAlive" })).to.equal(1);
    requests.close();
    await keepAlive.done;

    // The first holder writes, lets go to the waiter, whose write makes the first token stale.
    await c.store.put({ resource: r1, key: "k", value: new Uint8Array([1]), mutation: { token: first.token } });
    await c.lease.release({ token: first.token });
    const second = await waiter;
    await c.store.put({ resource: r1, key: "k", value: new Uint8Array([2]), mutation: { token: second.token } });
    const stale = await c.store.put({ resource: r1, key: "k", value: new Uint8Array([3]), mutation: { token: first.token } }).catch((e) => e);
    expect((stale as ConnectError).code).to.equal(Code.FailedPrecondition);

    const after = await scrape(server);
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels);
    expect(delta(...handled("Acquire", "OK"))).to.equal(3);
    expect(delta(...handled("Acquire", "Aborted"))).to.equal(1);
    expect(delta(...handled("Release", "OK"))).to.equal(1);
    expect(delta(...handled("KeepAlive", "OK"))).to.equal(1);
    expect(delta(...handled("Put", "OK", "fencekeeper.v1.FencedStoreService"))).to.equal(2);
    expect(delta(...handled("Put", "FailedPrecondition", "fencekeeper.v1.FencedStoreService"))).to.equal(1);
    expect(delta("grpc_server_handling_seconds_count", { grpc_service: LEASE, grpc_method: "Acquire" })).to.equal(4);
    expect(delta("fencekeeper_store_writes_refused_total", { grpc_method: "Put", reason: "STALE_TOKEN" })).to.equal(1);
    expect(delta("fencekeeper_lease_renewals_total", { grpc_method: "KeepAlive", result: "OK" })).to.equal(1);
    expect(delta("fencekeeper_lease_renewals_total", { grpc_method: "KeepAlive", result: "NotFound" })).to.equal(1);
    // Granted here: one, two and the waiter; one was released.
    expect(delta("fencekeeper_leases_held")).to.equal(2);
    expect(after.value("fencekeeper_acquire_waiting")).to.equal(0);
    expect(after.value("fencekeeper_streams_open", { grpc_service: LEASE, grpc_method: "KeepAlive" })).to.equal(0);
    expect(delta("fencekeeper_etcd_request_duration_seconds_count", { operation: "acquire", result: "ok" })).to.be.at.least(4);
  });

  it("counts a session as one lease held, however many acquisitions it carries, until it is closed", async () => {
    const held = async () => (await scrape(server)).value("fencekeeper_leases_held");
    const sessions = async () => (await scrape(server)).value("fencekeeper_sessions_held");
    const before = await held();
    const sessionsBefore = await sessions();
    const { sessionId } = await c.lease.openSession({ ttl: ttl(10), holder: "s" });
    const a = await c.lease.acquire({ resource: uniqueResource("metrics-session"), holder: "a", sessionId });
    await c.lease.acquire({ resource: uniqueResource("metrics-session"), holder: "b", sessionId });
    expect(await held()).to.equal(before + 1);
    expect(await sessions()).to.equal(sessionsBefore + 1);
    await c.lease.release({ token: a.token });
    expect(await held(), "releasing one acquisition leaves its session held").to.equal(before + 1);
    await c.lease.closeSession({ sessionId });
    expect(await held()).to.equal(before);
    expect(await sessions()).to.equal(sessionsBefore);
  });

  it("counts etcd errors and UNAVAILABLE answers while etcd does not answer, and the health gauges follow", async function () {
    this.timeout(30_000);
    const before = await scrape(server);
    etcd.pause();
    let after;
    try {
      // The server's health probe sees etcd frozen first, so that the Describe surely meets it frozen (once,
      // on a loaded machine, a Describe sent at once was answered).
      await eventually(async () => (await scrape(server)).value("fencekeeper_serving") === 0, "not serving while etcd is frozen", 10_000);
      const err = await c.lease.describe({ resource: uniqueResource("paused") }).catch((e) => e);
      expect(err, "Describe while etcd is frozen").to.be.instanceOf(ConnectError);
      expect((err as ConnectError).code).to.equal(Code.Unavailable);
      after = await scrape(server);
    } finally {
      etcd.resume();
    }
    expect(after.value("fencekeeper_etcd_reachable")).to.equal(0);
    expect(after.value("fencekeeper_etcd_request_errors_total", { operation: "describe" }) - before.value("fencekeeper_etcd_request_errors_total", { operation: "describe" })).to.equal(1);
    expect(after.value(...handled("Describe", "Unavailable")) - before.value(...handled("Describe", "Unavailable"))).to.equal(1);
    await eventually(async () => (await scrape(server)).value("fencekeeper_serving") === 1, "serving again", 15_000);
  });
});
