// The case the network nemeses are for, driven by hand: a holder whose replica is cut off with the etcd
// leader, behind a real partition (netns.ts). The majority elects a new leader, the holder's lease
// expires there and another client is granted the resource; the holder, still sure of its token, writes
// through its replica: nothing it sends is accepted, neither behind the partition nor after the heal
// once the new holder has written, and the new holder's value stands.
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { EtcdCluster } from "./etcd-cluster.js";
import { Network } from "./netns.js";
import { Replica } from "./replicas.js";

const PREFIX = "/fk-partition/";
const resource = "res";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ttl = { seconds: 2n, nanos: 0 };

async function put(c: Clients, token: FencingToken, value: string, mode: FenceMode, idempotencyKey = ""): Promise<ConnectError | undefined> {
  try {
    await c.store.put({ resource, key: "k", value: Buffer.from(value), mutation: { token, mode, idempotencyKey } }, { timeoutMs: 4_000 });
    return undefined;
  } catch (e) {
    return ConnectError.from(e);
  }
}

const reason = (e: ConnectError) => e.findDetails(ErrorInfoSchema)[0]?.reason;

describe("faults: a holder cut off with the etcd leader", function () {
  this.timeout(150_000);
  let net: Network | undefined;
  let cluster: EtcdCluster | undefined;
  const replicas: Replica[] = [];

  before(async () => {
    net = await Network.create(["m0", "m1", "m2", "r0", "r1"]);
    cluster = await EtcdCluster.start(3, net);
    for (const name of ["r0", "r1"]) replicas.push(await Replica.start(name, cluster.endpoints, PREFIX, net));
  });

  after(async () => {
    try {
      for (const r of replicas) await r.kill();
      await cluster?.destroy();
    } finally {
      await net?.destroy();
    }
  });

  it("cannot write once the majority granted the resource to another, neither behind the partition nor after the heal", async () => {
    const [r0, r1] = replicas;
    const a = clientsFor(r0.url);
    const b = clientsFor(r1.url);
    const ta = (await a.lease.acquire({ resource, ttl, holder: "a" })).token!;
    expect(await put(a, ta, "a1", FenceMode.ORDER)).to.equal(undefined);

    const leader = (await cluster!.waitForLeader()).name;
    const majority = ["m0", "m1", "m2"].filter((m) => m !== leader);
    await net!.partition([
      [leader, "r0"],
      [...majority, "r1"],
    ]);
    let tb: FencingToken | undefined;
    try {
      // The majority elects a leader and lets a's lease expire (it is not renewed: nothing of a's
      // reaches it); b waits for the resource there, through r1, until granted.
      const until = Date.now() + 60_000;
      while (!tb && Date.now() < until) {
        try {
          tb = (await b.lease.acquire({ resource, ttl: { seconds: 30n, nanos: 0 }, holder: "b", wait: true, waitTimeout: { seconds: 10n, nanos: 0 } }, { timeoutMs: 12_000 })).token;
        } catch (e) {
          const code = ConnectError.from(e).code;
          expect([Code.Unavailable, Code.DeadlineExceeded, Code.Aborted], `b's acquire: ${ConnectError.from(e).message}`).to.include(code);
          await sleep(300);
        }
      }
      expect(tb, "b was granted the resource on the majority's side").not.to.equal(undefined);
      expect(tb!.generation > ta.generation).to.equal(true);

      // a, behind the old leader, writes as if it still held the resource: no answer says done.
      for (const mode of [FenceMode.ORDER, FenceMode.LIVE]) {
        const e = await put(a, ta, `a2-${mode}`, mode);
        expect(e, "a's write behind the partition").to.be.instanceOf(ConnectError);
      }
    } finally {
      await net!.heal();
    }
    await cluster!.waitForLeader();

    // b writes (sent again with the same idempotency key while r1's etcd client finds its way back);
    // from then on a's token is stale, through either replica.
    let eb: ConnectError | undefined;
    const bUntil = Date.now() + 30_000;
    do eb = await put(b, tb!, "b1", FenceMode.ORDER, "b1");
    while (eb && [Code.Unavailable, Code.DeadlineExceeded].includes(eb.code) && Date.now() < bUntil);
    expect(eb, `b's write: ${eb?.message}`).to.equal(undefined);
    for (const [c, name] of [
      [a, "r0"],
      [b, "r1"],
    ] as const) {
      let e: ConnectError | undefined;
      const until = Date.now() + 30_000;
      do {
        e = await put(c, ta, `a3-${name}`, FenceMode.ORDER);
      } while (e && [Code.Unavailable, Code.DeadlineExceeded].includes(e.code) && Date.now() < until && (await sleep(300), true));
      expect(e?.code, `a's write through ${name} after the heal: ${e?.message}`).to.equal(Code.FailedPrecondition);
      expect(reason(e!)).to.equal("STALE_TOKEN");
    }
    // Whatever a sent behind the partition never landed, not even later: b's value stands.
    await sleep(1_000);
    const got = await b.store.get({ resource, key: "k" });
    expect(Buffer.from(got.value).toString()).to.equal("b1");
    expect(got.fence).to.equal(tb!.generation);
    await b.lease.release({ token: tb });
  });
});
