// SIGTERM on a replica while clients use it, as Kubernetes does when it moves a pod: unary calls in
// flight finish, streams end with UNAVAILABLE so that clients reconnect to another replica, the process
// exits 0, and every lease is still held: a shutdown revokes nothing.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { clientsFor } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import { HealthCheckResponse_ServingStatus as Status } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { KeepAliveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { healthClient, startMeshServer } from "./support/mesh-server.js";
import { AsyncQueue } from "../../client/async-queue.js";
import { collect } from "./support/collect.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const PREFIX = `/fk-shutdown-${process.pid}/`;

function expectUnavailable(err: unknown, what: string) {
  expect(err, what).to.be.instanceOf(ConnectError);
  expect(Code[(err as ConnectError).code], `${what}: ${(err as Error).message}`).to.equal("Unavailable");
}

describe("graceful shutdown on SIGTERM", () => {
  let etcd: TestEtcd;
  let stays: TestServer;

  before(async () => {
    etcd = await startEtcd();
    stays = await startMeshServer({ etcd: etcd.endpoint, prefix: PREFIX });
  });
  after(async () => {
    await stays?.stop();
    await etcd?.destroy();
  });

  it("lets unary calls in flight finish, ends the streams with UNAVAILABLE, exits 0, and revokes no lease", async function () {
    this.timeout(30_000);
    const leaving = await startMeshServer({ etcd: etcd.endpoint, prefix: PREFIX, args: ["--shutdown-grace", "10000"] });
    const a = clientsFor(leaving.url);
    const b = clientsFor(stays.url);
    const resource = uniqueResource("handover");
    const renewed = uniqueResource("renewed");

    // Through the replica that stays: the current holder. Through the one that leaves: a lease kept
    // alive on a KeepAlive stream, an Observe stream, a health Watch, and an Acquire waiting in line.
    const holder = await b.lease.acquire({ resource, ttl: ttl(20), holder: "holder" });
    const kept = await a.lease.acquire({ resource: renewed, ttl: ttl(20), holder: "kept" });
    const requests = new AsyncQueue<MessageInitShape<typeof KeepAliveRequestSchema>>();
    const keepAlive = collect(a.lease.keepAlive(requests));
    requests.push({ leaseId: kept.token!.leaseId });
    const observe = collect(a.lease.observe({ resource }));
    const watch = collect(healthClient(leaving.url).watch({ service: "" }));
    const waiter = a.lease.acquire({ resource, ttl: ttl(20), holder: "waiter", wait: true }).then(
      (res) => res,
      (err: unknown) => err,
    );
    await eventually(async () => (await b.lease.describe({ resource })).waiters === 1, "the waiter is in line");
    await eventually(() => keepAlive.items.length === 1 && observe.items.length === 1 && watch.items.length === 1, "every stream answered once");

    const exited = leaving.stop("SIGTERM");

    // The streams end at once with UNAVAILABLE; the health Watch says NOT_SERVING first.
    expectUnavailable(await keepAlive.done, "KeepAlive");
    expectUnavailable(await observe.done, "Observe");
    expectUnavailable(await watch.done, "health Watch");
    expect(watch.items.map((r) => r.status)).to.deep.equal([Status.SERVING, Status.NOT_SERVING]);

    // The replica takes no new call...
    const refused = await a.lease.describe({ resource }).catch((e: unknown) => e);
    expectUnavailable(refused, "a new call");

    // ...but the waiting Acquire is still in flight: the holder lets go through the other replica, and
    // the leaving one grants the waiter before it exits.
    await b.lease.release({ token: holder.token });
    const granted = await waiter;
    expect(granted, String(granted)).to.not.be.instanceOf(Error);
    const token = (granted as Awaited<ReturnType<typeof a.lease.acquire>>).token!;
    expect(token.generation > holder.token!.generation).to.equal(true);
    expect(await exited).to.equal(0);

    // Nothing was revoked: both leases granted through the leaving replica are still held.
    const handedOver = await b.lease.describe({ resource });
    expect(handedOver).to.deep.include({ held: true, holder: "waiter" });
    expect(handedOver.token).to.deep.include({ generation: token.generation, leaseId: token.leaseId });
    const stillKept = await b.lease.describe({ resource: renewed });
    expect(stillKept).to.deep.include({ held: true, holder: "kept" });
    expect(Number(stillKept.ttl!.seconds)).to.be.greaterThan(10);
    // And the client carries on through the other replica.
    expect(Number((await b.lease.renew({ leaseId: kept.token!.leaseId })).ttl!.seconds)).to.be.greaterThan(10);
  });

  it("answers UNAVAILABLE to a call still waiting when the grace period ends, and takes it out of the line", async function () {
    this.timeout(30_000);
    const leaving = await startMeshServer({ etcd: etcd.endpoint, prefix: PREFIX, args: ["--shutdown-grace", "300"] });
    const a = clientsFor(leaving.url);
    const b = clientsFor(stays.url);
    const resource = uniqueResource("abandoned");
    const holder = await b.lease.acquire({ resource, ttl: ttl(20), holder: "holder" });
    const waiter = a.lease.acquire({ resource, ttl: ttl(20), holder: "waiter", wait: true }).catch((e: unknown) => e);
    await eventually(async () => (await b.lease.describe({ resource })).waiters === 1, "the waiter is in line");

    const started = Date.now();
    expect(await leaving.stop("SIGTERM")).to.equal(0);
    expectUnavailable(await waiter, "the abandoned Acquire");
    expect(Date.now() - started).to.be.lessThan(5_000);

    const after = await b.lease.describe({ resource });
    expect(after).to.deep.include({ held: true, holder: "holder", waiters: 0 });
    expect(after.token!.generation).to.equal(holder.token!.generation);
  });
});
