// A replica whose etcd member goes silent (cut off by a real partition: its packets dropped, its
// connections hanging) leaves it within about one etcd deadline and works on with the other members;
// reads it left unanswered are sent again to another member; once the member answers again it is used
// again; nothing written meanwhile is lost.
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { FenceMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor, type Clients } from "../harness/clients.js";
import { EtcdCluster } from "./etcd-cluster.js";
import { Network } from "./netns.js";
import { Replica } from "./replicas.js";

const PREFIX = "/fk-failover/";
/** The replica's --etcd-timeout (the server's default). */
const ETCD_TIMEOUT_MS = 5_000;
const ttl = { seconds: 30n, nanos: 0 };

/** Runs op again while it answers UNAVAILABLE or DEADLINE_EXCEEDED; its last error after boundMs. */
async function within<T>(boundMs: number, op: () => Promise<T>): Promise<T> {
  const until = Date.now() + boundMs;
  for (;;) {
    try {
      return await op();
    } catch (e) {
      const err = ConnectError.from(e);
      if (![Code.Unavailable, Code.DeadlineExceeded].includes(err.code) || Date.now() >= until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Acquire, a fenced write (sent again with its idempotency key while unanswered), release: timed. */
async function cycle(c: Clients, resource: string, value: string, boundMs: number): Promise<{ ms: number; token: FencingToken }> {
  const started = Date.now();
  const token = (await within(boundMs, () => c.lease.acquire({ resource, ttl, holder: "h" }, { timeoutMs: 2 * ETCD_TIMEOUT_MS }))).token!;
  await within(boundMs - (Date.now() - started), () =>
    c.store.put(
      { resource, key: "k", value: Buffer.from(value), mutation: { token, mode: FenceMode.ORDER, idempotencyKey: value } },
      { timeoutMs: 2 * ETCD_TIMEOUT_MS },
    ),
  );
  await within(boundMs - (Date.now() - started), () => c.lease.release({ token }, { timeoutMs: 2 * ETCD_TIMEOUT_MS }));
  return { ms: Date.now() - started, token };
}

describe("faults: a replica whose etcd member goes silent", function () {
  this.timeout(90_000);
  let net: Network | undefined;
  let cluster: EtcdCluster | undefined;
  let replica: Replica | undefined;

  before(async () => {
    net = await Network.create(["m0", "m1", "m2", "r0"]);
    cluster = await EtcdCluster.start(3, net);
    replica = await Replica.start("r0", cluster.endpoints, PREFIX, net);
  });

  after(async () => {
    try {
      await replica?.kill();
      await cluster?.destroy();
    } finally {
      await net?.destroy();
    }
  });

  it("leaves it within about one deadline, uses it again once it answers, and loses nothing", async () => {
    const c = clientsFor(replica!.url);
    const written = new Map<string, { value: string; token: FencingToken }>();
    const run = async (resource: string, value: string, boundMs: number) => {
      const r = await cycle(c, resource, value, boundMs);
      written.set(resource, { value, token: r.token });
      return r.ms;
    };
    await run("warm", "w0", 2 * ETCD_TIMEOUT_MS);

    // m0 falls silent for the replica (the members still reach each other: etcd keeps its quorum). The
    // replica's calls are spread over the members at random, so some of a few cycles' calls go to m0:
    // one waits out its deadline, the rest go to m1 and m2 without waiting.
    const cut = await net!.cut(["r0", "m0"]);
    // Reads are answered, none UNAVAILABLE: one that m0 leaves unanswered is sent again to another member.
    const reading = Date.now();
    for (let i = 0; i < 6; i++) {
      const got = await c.store.get({ resource: "warm", key: "k" }, { timeoutMs: 3 * ETCD_TIMEOUT_MS });
      expect(Buffer.from(got.value).toString()).to.equal("w0");
    }
    const readMs = Date.now() - reading;
    expect(readMs, `six reads with m0 silent took ${readMs} ms`).to.be.below(2 * ETCD_TIMEOUT_MS);
    const started = Date.now();
    const times: number[] = [];
    for (let i = 0; i < 6; i++) times.push(await run(`silent-${i}`, `v${i}`, 2 * ETCD_TIMEOUT_MS));
    const total = Date.now() - started;
    expect(total, `six cycles with m0 silent took ${total} ms (each: ${times.join(", ")} ms)`).to.be.below(2 * ETCD_TIMEOUT_MS);

    // m0 answers again, and m1 and m2 fall silent instead: only m0 is left, so the replica must come
    // back to it (after each of m1 and m2 has let at most a call go unanswered).
    await net!.heal(cut);
    await net!.cut(["r0", "m1"], ["r0", "m2"]);
    const back = Date.now();
    const after: number[] = [];
    for (let i = 0; i < 3; i++) after.push(await run(`back-${i}`, `b${i}`, 4 * ETCD_TIMEOUT_MS));
    const backMs = Date.now() - back;
    expect(backMs, `three cycles through m0 alone took ${backMs} ms (each: ${after.join(", ")} ms)`).to.be.below(4 * ETCD_TIMEOUT_MS);
    await net!.heal();

    // Every write acknowledged stands, under the token that wrote it.
    for (const [resource, { value, token }] of written) {
      const got = await within(2 * ETCD_TIMEOUT_MS, () => c.store.get({ resource, key: "k" }));
      expect(Buffer.from(got.value).toString(), resource).to.equal(value);
      expect(got.fence, resource).to.equal(token.generation);
    }
  });
});
