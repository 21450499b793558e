// Issue 8, item 5: no ghost owner after an etcd outage. With A holding a resource and W waiting, etcd was
// stopped and restarted on the same data: W's Acquire failed UNAVAILABLE, but its key in line survived,
// became the owner after the restart with a generation never recorded as issued, and blocked the resource
// for W's TTL with nobody holding it. An Acquire that failed must leave nothing that can own, or block,
// the resource once etcd is back.
//
// Twice: etcd back at once after W's Acquire failed, and etcd away for longer than W's TTL after that
// (etcd renews every lease to its full TTL when it restarts, so a revocation retried only for W's TTL
// would leave W's place to come back with etcd and block the line for another 10 s).
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import type { DescribeResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { eventually, sleep, uniqueResource, useServer, within } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("hardening: no ghost owner after an etcd outage (issue 8, item 5)", function () {
  this.timeout(90_000);
  const s = useServer();

  async function ghostScenario(downAfterFailureMs: number) {
    const resource = uniqueResource("ghost");
    const a = (await s.lease.acquire({ resource, ttl: ttl(20), holder: "A" })).token!;
    const w = s.lease.acquire({ resource, ttl: ttl(10), holder: "W", wait: true }).then(
      (r) => `granted generation ${r.token!.generation}`,
      (e) => Code[ConnectError.from(e).code],
    );
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "W waits in line");

    await s.etcd.stop();
    let wOutcome: string;
    try {
      wOutcome = await within(w, 30_000, "still waiting 30 s into the outage");
      // etcd stays away a while longer after W gave up, or comes back at once.
      if (downAfterFailureMs > 0) await sleep(downAfterFailureMs);
    } finally {
      await s.etcd.start();
    }
    expect(wOutcome, "W's Acquire during the outage").to.equal("Unavailable");

    // From now on, every Describe shows A, nobody, or the Acquire granted below; never W, nor a
    // generation nobody was given.
    const seen: DescribeResponse[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        try {
          seen.push(await s.lease.describe({ resource }));
        } catch {
          // etcd still coming back: UNAVAILABLE proves nothing
        }
        await sleep(100);
      }
    })();

    let b: { generation: bigint; grantedAfterMs: number } | undefined;
    try {
      // A's lease outlived the outage (etcd renews leases when it restarts): its release goes through
      // once the server reaches etcd again.
      await eventually(
        () =>
          s.lease.release({ token: a }).then(
            () => true,
            (e) => {
              const code = ConnectError.from(e).code;
              if (code !== Code.Unavailable) throw e;
              return false;
            },
          ),
        "A's release goes through after the restart",
        20_000,
      );
      const released = Date.now();
      const granted = await s.lease.acquire({ resource, ttl: ttl(10), holder: "B", wait: true }, { timeoutMs: 20_000 });
      b = { generation: granted.token!.generation, grantedAfterMs: Date.now() - released };
      await sleep(300);
    } finally {
      watching = false;
      await watcher;
    }

    expect(b.grantedAfterMs, "B was granted only after W's TTL: W's place outlived its failed Acquire").to.be.below(5000);
    expect(Number(b.generation)).to.be.greaterThan(Number(a.generation));
    const { lastIssued } = await s.store.getFence({ resource });
    expect(Number(b.generation)).to.be.at.most(Number(lastIssued));

    const allowed = new Map([
      [a.generation, "A"],
      [b.generation, "B"],
    ]);
    const ghosts = seen.filter((d) => d.held && allowed.get(d.token!.generation) !== d.holder);
    expect(
      ghosts.map((d) => `${d.holder} generation ${d.token!.generation} (last issued ${d.lastIssued})`),
      "Describe showed a holder that no successful Acquire made",
    ).to.deep.equal([]);
    expect(seen.length).to.be.greaterThan(0);
    expect(await s.lease.describe({ resource })).to.deep.include({ held: true, holder: "B", waiters: 0 });
  }

  it("A holds (TTL 20 s), W waits (TTL 10 s), etcd restarts: W fails UNAVAILABLE, and once A releases, a new Acquire is granted at once, above A and within what was issued", async () => {
    await ghostScenario(0);
  });

  it("the same with etcd away for longer than W's TTL after W failed (12 s): W's place is gone too once etcd is back", async () => {
    await ghostScenario(12_000);
  });
});
