// Two replicas on one etcd, as a Deployment runs them: all state is in etcd, so a client may acquire
// through one replica and renew, write and observe through the other, and a replica that dies (SIGKILL)
// takes no acknowledged write with it.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { clientsFor, type Clients } from "../harness/clients.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import type { TestServer } from "../harness/server.js";
import { eventually, uniqueResource } from "../harness/suite.js";
import { ErrorInfoSchema, type ErrorInfo } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { KeepAliveRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { startMeshServer } from "./support/mesh-server.js";
import { AsyncQueue } from "../../client/async-queue.js";
import { collect } from "./support/collect.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe("two replicas on one etcd", () => {
  const prefix = `/fk-replicas-${process.pid}/`;
  let etcd: TestEtcd;
  let one: TestServer;
  let two: TestServer;
  let a: Clients;
  let b: Clients;

  before(async () => {
    etcd = await startEtcd();
    [one, two] = await Promise.all([startMeshServer({ etcd: etcd.endpoint, prefix }), startMeshServer({ etcd: etcd.endpoint, prefix })]);
    a = clientsFor(one.url);
    b = clientsFor(two.url);
  });
  after(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await etcd?.destroy();
  });

  it("a lease acquired through one replica is renewed, fenced and observed through the other", async () => {
    const resource = uniqueResource("shared");
    const ctl = new AbortController();
    const observed = collect(b.lease.observe({ resource }, { signal: ctl.signal }));
    await eventually(() => observed.items.length === 1, "Observe's first answer");
    expect(observed.items[0].held).to.equal(false);

    const first = await a.lease.acquire({ resource, ttl: ttl(10), holder: "first" });
    await eventually(() => observed.items.length === 2, "B observes the acquisition through A");
    expect(observed.items[1]).to.deep.include({ held: true, holder: "first" });
    expect(observed.items[1].token).to.deep.include({ generation: first.token!.generation, leaseId: first.token!.leaseId });

    expect(Number((await b.lease.renew({ leaseId: first.token!.leaseId })).ttl!.seconds)).to.be.within(9, 10);
    const requests = new AsyncQueue<MessageInitShape<typeof KeepAliveRequestSchema>>();
    const keepAlive = collect(b.lease.keepAlive(requests));
    requests.push({ leaseId: first.token!.leaseId });
    await eventually(() => keepAlive.items.length === 1, "a KeepAlive answer through B");
    expect(keepAlive.items[0].ttl, "renewed").to.not.equal(undefined);
    requests.close();
    expect(await keepAlive.done).to.equal(undefined);

    const put = await b.store.put({ resource, key: "k", value: bytes("from first"), mutation: { token: first.token } });
    expect(put.commit!.fence).to.equal(first.token!.generation);

    // A newer generation through B writes; the first holder's token is then stale through either replica.
    await a.lease.release({ token: first.token });
    await eventually(() => observed.items.length === 3, "B observes the release through A");
    const second = await b.lease.acquire({ resource, ttl: ttl(10), holder: "second" });
    await b.store.put({ resource, key: "k", value: bytes("from second"), mutation: { token: second.token } });
    await eventually(() => observed.items.length === 4, "B observes the new holder");
    expect(observed.items.map((o) => o.holder)).to.deep.equal(["", "first", "", "second"]);
    for (const store of [a.store, b.store]) {
      const err = await store.put({ resource, key: "k", value: bytes("stale"), mutation: { token: first.token } }).catch((e) => e);
      expect(err).to.be.instanceOf(ConnectError);
      expect((err as ConnectError).code).to.equal(Code.FailedPrecondition);
      expect(((err as ConnectError).findDetails(ErrorInfoSchema)[0] as ErrorInfo).reason).to.equal("STALE_TOKEN");
    }
    expect(text((await a.store.get({ resource, key: "k" })).value)).to.equal("from second");
    ctl.abort();
    await observed.done;
  });

  it("a replica killed with SIGKILL loses no acknowledged write", async function () {
    this.timeout(60_000);
    const victim = await startMeshServer({ etcd: etcd.endpoint, prefix });
    const v = clientsFor(victim.url);
    const resource = uniqueResource("crash");
    const { token } = await b.lease.acquire({ resource, ttl: ttl(30), holder: "writer" });

    // Four writers put distinct keys through the victim until it dies; each key has its own
    // idempotency key, so that a write whose answer was lost can be retried safely.
    const acknowledged = new Map<string, string>();
    const unanswered: string[] = [];
    const writer = async (w: number) => {
      for (let i = 0; ; i++) {
        const key = `w${w}-${i}`;
        try {
          await v.store.put({ resource, key, value: bytes(`value of ${key}`), mutation: { token, idempotencyKey: key } });
          acknowledged.set(key, `value of ${key}`);
        } catch {
          unanswered.push(key);
          return;
        }
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await eventually(() => acknowledged.size >= 40, "40 acknowledged writes", 20_000);
    victim.process.kill("SIGKILL");
    await Promise.all(writers);
    expect(await victim.stop()).to.equal(null);
    expect(unanswered).to.have.length(4);

    // Every acknowledged write is there, read through the other replica.
    const listed = await b.store.range({ resource, pageSize: 1000 });
    const stored = new Map(listed.entries.map((e) => [e.key, text(e.value)]));
    for (const [key, value] of acknowledged) expect(stored.get(key), key).to.equal(value);

    // A write whose answer was lost is retried through the other replica with its idempotency key:
    // replayed if it had committed, applied now if it had not; either way it is there once.
    for (const key of unanswered) {
      const retry = await b.store.put({ resource, key, value: bytes(`value of ${key}`), mutation: { token, idempotencyKey: key } });
      expect(retry.commit!.replayed, key).to.equal(stored.has(key));
      expect(text((await b.store.get({ resource, key })).value)).to.equal(`value of ${key}`);
    }

    // The lease outlives the replica that served its writes.
    expect(await b.lease.describe({ resource })).to.deep.include({ held: true, holder: "writer" });
  });
});
