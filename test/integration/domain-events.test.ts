// The domain's events (server/events/events.ts), as the metrics and the ownership log hear them: the
// services run in this process on a real etcd, called through connect's in-memory transport, and each
// test asserts on the events its calls cause, in order.
import { expect } from "chai";
import { Code, ConnectError, createClient, createRouterTransport, type Client } from "@connectrpc/connect";
import { pino } from "pino";
import type { Etcd3 } from "etcd3";
import { createApp, type App } from "../../server/app.js";
import { Access } from "../../server/auth/access.js";
import { Authenticator } from "../../server/auth/authenticator.js";
import { DomainEvents, type DomainEvent } from "../../server/events/events.js";
import { connectEtcd } from "../../server/etcd/client.js";
import { ownershipLog } from "../../server/observability/ownership-log.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { eventually, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

/** A stream of one message. */
async function* once<T>(message: T): AsyncIterable<T> {
  yield message;
}

describe("domain events", () => {
  let etcd: TestEtcd;
  let client: Etcd3;
  let app: App;
  let lease: Client<typeof LeaseService>;
  let store: Client<typeof FencedStoreService>;
  let heard: DomainEvent[];
  let stopListening: () => void;
  /** What the server logged, parsed. */
  const logged: Record<string, unknown>[] = [];

  before(async () => {
    etcd = await startEtcd();
    client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: 5000 });
    app = createApp({
      etcd: client,
      access: new Access(await Authenticator.create({ mtls: false })),
      callerCaps: { streams: 100, waiters: 100, streamMessagesPerSecond: 1000 },
      prefix: `/events-${process.pid}/`,
      etcdLimits: { maxTxnOps: 128, maxRequestBytes: 1536 * 1024 },
      etcdTimeoutMs: 5000,
      log: pino({ level: "debug" }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
    });
    ownershipLog(pino({ level: "debug" }, { write: (line: string) => void logged.push(JSON.parse(line)) }), app.events);
    const transport = createRouterTransport((router) => app.routes(router));
    lease = createClient(LeaseService, transport);
    store = createClient(FencedStoreService, transport);
  });
  beforeEach(() => {
    heard = [];
    stopListening = app.events.on((e) => heard.push(e));
  });
  afterEach(() => stopListening());
  after(async () => {
    app?.close();
    client?.close();
    await etcd?.destroy();
  });

  /** The events heard so far, without the renewals and writes the test does not look at. */
  const types = () => heard.map((e) => e.type);

  it("acquire, renew by Renew and by KeepAlive, release: granted, renewed twice, released", async () => {
    const resource = uniqueResource("events");
    const { token } = await lease.acquire({ resource, ttl: ttl(10), holder: "one" });
    const leaseId = token!.leaseId;
    await lease.renew({ leaseId });
    for await (const answer of lease.keepAlive(once({ leaseId }))) expect(answer.error).to.equal(undefined);
    await lease.release({ token });

    const generation = token!.generation;
    expect(heard).to.have.length(4);
    expect(heard[0]).to.deep.include({ type: "granted", resource, generation, leaseId, onSession: false, waited: false });
    expect((heard[0] as Extract<DomainEvent, { type: "granted" }>).ttlSeconds).to.be.within(1, 10);
    expect(heard[1]).to.deep.include({ type: "renewed", leaseId, via: "Renew" });
    expect(heard[2]).to.deep.include({ type: "renewed", leaseId, via: "KeepAlive" });
    expect(heard[3]).to.deep.equal({ type: "released", resource, generation, leaseId, onSession: false });
  });

  it("a renewal that finds the lease expired: lease gone, then not renewed (not_found); the expiry itself says nothing", async function () {
    this.timeout(30_000);
    const resource = uniqueResource("events-expiry");
    const { token } = await lease.acquire({ resource, ttl: ttl(2), holder: "short" });
    const leaseId = token!.leaseId;
    // Describe reads etcd and renews nothing: the lease runs out on its own.
    await eventually(async () => !(await lease.describe({ resource })).held, "the lease expired", 20_000);
    expect(types()).to.deep.equal(["granted"]);

    const err = await lease.renew({ leaseId }).catch((e: unknown) => e);
    expect((err as ConnectError).code).to.equal(Code.NotFound);
    expect(heard.slice(1)).to.deep.equal([
      { type: "lease gone", leaseId },
      { type: "not renewed", leaseId, via: "Renew", kind: "not_found" },
    ]);
  });

  it("a waiter: waiting, then the holder's release, done waiting, and its grant after a wait", async () => {
    const resource = uniqueResource("events-wait");
    const first = await lease.acquire({ resource, ttl: ttl(10), holder: "first" });
    const second = lease.acquire({ resource, ttl: ttl(10), holder: "second", wait: true });
    await eventually(() => types().includes("waiting"), "the second caller waits in line", 20_000);
    await lease.release({ token: first.token });
    const { token } = await second;

    expect(types()).to.deep.equal(["granted", "waiting", "released", "done waiting", "granted"]);
    expect(heard[1]).to.deep.equal({ type: "waiting", resource });
    expect(heard[4]).to.deep.include({ type: "granted", resource, generation: token!.generation, leaseId: token!.leaseId, onSession: false, waited: true });
    await lease.release({ token });
  });

  it("a session: opened, acquisitions on it granted and released as on the session, closed", async () => {
    const resource = uniqueResource("events-session");
    const { sessionId, ttl: granted } = await lease.openSession({ ttl: ttl(10), holder: "s" });
    const { token } = await lease.acquire({ resource, holder: "s", sessionId });
    await lease.release({ token });
    await lease.closeSession({ sessionId });

    expect(heard).to.deep.equal([
      { type: "session opened", sessionId, ttlSeconds: Number(granted!.seconds) },
      { type: "granted", resource, generation: token!.generation, leaseId: sessionId, onSession: true, ttlSeconds: undefined, waited: false, mode: "exclusive" },
      { type: "released", resource, generation: token!.generation, leaseId: sessionId, onSession: true },
      { type: "session closed", sessionId },
    ]);
  });

  it("refusals with their reasons: an acquisition of a held resource, a stale write; and what was written", async () => {
    const resource = uniqueResource("events-store");
    const first = await lease.acquire({ resource, ttl: ttl(10), holder: "first" });
    const held = await lease.acquire({ resource, ttl: ttl(10), holder: "other" }).catch((e: unknown) => e);
    expect((held as ConnectError).code).to.equal(Code.Aborted);
    await store.put({ resource, key: "k", value: new Uint8Array([1]), mutation: { token: first.token } });
    await lease.release({ token: first.token });
    const second = await lease.acquire({ resource, ttl: ttl(10), holder: "second" });
    await store.delete({ resource, key: "k", mutation: { token: second.token } });
    const stale = await store.txn({ resource, ops: [{ op: { case: "put", value: { key: "k", value: new Uint8Array([2]) } } }], mutation: { token: first.token } }).catch((e: unknown) => e);
    expect((stale as ConnectError).code).to.equal(Code.FailedPrecondition);

    expect(types()).to.deep.equal(["granted", "refused", "written", "released", "granted", "written", "refused"]);
    expect(heard[1]).to.deep.equal({ type: "refused", operation: "acquire", resource, reason: "RESOURCE_HELD" });
    expect(heard[2]).to.deep.include({ type: "written", op: "put", resource, generation: first.token!.generation });
    expect(heard[5]).to.deep.include({ type: "written", op: "delete", resource, generation: second.token!.generation });
    // A write's refusal carries its token's generation (the audit trail's line names it).
    expect(heard[6]).to.deep.equal({ type: "refused", operation: "txn", resource, reason: "STALE_TOKEN", generation: first.token!.generation });
    await lease.release({ token: second.token });
  });

  it("the ownership log follows grants and releases at debug level", async () => {
    const resource = uniqueResource("events-log");
    const { token } = await lease.acquire({ resource, ttl: ttl(10), holder: "h" });
    await lease.release({ token });
    const lines = logged.filter((l) => l.resource === resource).map(({ msg, generation, leaseId, level }) => ({ msg, generation, leaseId, level }));
    const ids = { generation: String(token!.generation), leaseId: String(token!.leaseId), level: 20 };
    expect(lines).to.deep.equal([
      { msg: "granted", ...ids },
      { msg: "released", ...ids },
    ]);
  });

  it("a listener that throws is reported and skipped: the call succeeds, the other listeners hear the event", async () => {
    const stop = app.events.on(() => {
      throw new Error("a broken listener");
    });
    try {
      const resource = uniqueResource("events-throw");
      const { token } = await lease.acquire({ resource, ttl: ttl(10), holder: "h" });
      await lease.release({ token });
      expect(types()).to.deep.equal(["granted", "released"]);
      // The server reports it (createApp logs it as an error).
      expect(logged.filter((l) => l.msg === "a listener of domain events failed").map((l) => l.event)).to.deep.equal(["granted", "released"]);
    } finally {
      stop();
    }

    const failures: [unknown, DomainEvent][] = [];
    const events = new DomainEvents((err, event) => failures.push([err, event]));
    const later: DomainEvent[] = [];
    events.on(() => {
      throw new Error("boom");
    });
    events.on((e) => later.push(e));
    events.emit({ type: "lease gone", leaseId: 7n });
    expect(later).to.deep.equal([{ type: "lease gone", leaseId: 7n }]);
    expect(failures).to.have.length(1);
    expect((failures[0][0] as Error).message).to.equal("boom");
  });
});
