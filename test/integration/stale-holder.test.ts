// The article's timeline, with real processes: a holder paused past its TTL comes back and writes.
import { expect } from "chai";
import { FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { ProcessClient } from "../harness/process-client.js";
import { useServer, uniqueResource, sleep } from "../harness/suite.js";

const HOLDER = "test/integration/holder-process.ts";

describe("a stale holder at the write boundary", () => {
  const s = useServer();
  const procs: ProcessClient[] = [];
  const holder = () => {
    const p = new ProcessClient(HOLDER, [s.server.url]);
    procs.push(p);
    return p;
  };
  afterEach(() => procs.splice(0).forEach((p) => p.kill()));

  it("A paused past its TTL is refused STALE_TOKEN once B has written, and B's value stays", async () => {
    const resource = uniqueResource("timeline");
    const a = holder();
    const b = holder();

    const granted = await a.send(`acquire ${resource} 2 A`);
    const tokenA = BigInt(granted.token.generation);
    expect(await a.send(`put ${resource} doc from-A-early`)).to.include({ ok: true });

    a.pause(); // a scheduler pause, a stalled runtime: A does not know
    await sleep(3000); // past A's TTL; A never renewed

    const grantedB = await b.send(`acquire ${resource} 5 B`);
    expect(BigInt(grantedB.token.generation) > tokenA).to.equal(true);
    expect(await b.send(`put ${resource} doc from-B`)).to.include({ ok: true });

    a.resume();
    const refused = await a.send(`put ${resource} doc from-A-stale`);
    expect(refused).to.include({ code: "FailedPrecondition", reason: "STALE_TOKEN" });
    expect(refused.message).to.match(/older than the fence/);

    const stored = await s.store.get({ resource, key: "doc" });
    expect(Buffer.from(stored.value).toString()).to.equal("from-B");
    expect(stored.fence).to.equal(BigInt(grantedB.token.generation));
  });

  it("the boundary case: expired, no newer generation has written: ORDER accepts, LIVE refuses", async () => {
    const resource = uniqueResource("boundary");
    const a = holder();
    const granted = await a.send(`acquire ${resource} 2 A`);
    a.pause();
    await sleep(3000);
    a.resume();

    const live = await a.send(`put ${resource} doc late-live live`);
    expect(live).to.include({ code: "FailedPrecondition", reason: "LEASE_NOT_HELD" });
    expect((await s.store.get({ resource, key: "doc" })).found).to.equal(false);

    const order = await a.send(`put ${resource} doc late-order`);
    expect(order).to.include({ ok: true, fence: granted.token.generation });
    expect(Buffer.from((await s.store.get({ resource, key: "doc" })).value).toString()).to.equal("late-order");
  });

  it("a live holder writes under LIVE", async () => {
    const resource = uniqueResource("live");
    const { token } = await s.lease.acquire({ resource, ttl: { seconds: 5n, nanos: 0 }, holder: "A" });
    const res = await s.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token, mode: FenceMode.LIVE } });
    expect(res.commit!.fence).to.equal(token!.generation);
  });
});
