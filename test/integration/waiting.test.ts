// Waiting in line: FIFO order, deadlines, cancellation, and what Observe sees of each handover.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { Etcd3 } from "etcd3";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FencingTokenSchema } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import type { ObserveResponse } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { useServer, uniqueResource, sleep, eventually } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("waiting for a held resource", () => {
  const s = useServer();

  /** Keys left in etcd for a resource's acquisitions (its owner and its line), across all prefixes of this test etcd. */
  async function lineKeys(resource: string): Promise<string[]> {
    const etcd = new Etcd3({ hosts: s.etcd.endpoint });
    try {
      const keys = await etcd.getAll().prefix("/").keys();
      const root = `/r/${encodeURIComponent(resource)}/`;
      return keys.filter((k) => k.includes(`${root}q/`) || k.endsWith(`${root}owner`));
    } finally {
      etcd.close();
    }
  }

  it("fails fast with ABORTED / RESOURCE_HELD and the holder's token when wait is unset", async () => {
    const resource = uniqueResource("held");
    const a = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    const err = ConnectError.from(await s.lease.acquire({ resource, ttl: ttl(5), holder: "B" }).catch((e) => e));
    expect(err.code).to.equal(Code.Aborted);
    const info = err.findDetails(ErrorInfoSchema)[0];
    expect(info.reason).to.equal("RESOURCE_HELD");
    expect(info.metadata).to.include({ holder: "A", generation: String(a.token!.generation) });
    expect(err.findDetails(FencingTokenSchema)[0]).to.deep.include({ generation: a.token!.generation, leaseId: a.token!.leaseId });
    expect(await lineKeys(resource)).to.have.length(1);
  });

  it("grants waiters in FIFO order as each holder releases, with increasing generations", async () => {
    const resource = uniqueResource("fifo");
    const first = await s.lease.acquire({ resource, ttl: ttl(5), holder: "first" });
    const order: string[] = [];
    const waiter = async (name: string) => {
      const res = await s.lease.acquire({ resource, ttl: ttl(5), holder: name, wait: true }, { timeoutMs: 20_000 });
      order.push(name);
      return res;
    };
    const w1 = waiter("w1");
    await sleep(200);
    const w2 = waiter("w2");
    await sleep(200);
    const w3 = waiter("w3");
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 3, "three waiters in line");

    await s.lease.release({ token: first.token });
    const g1 = await w1;
    await s.lease.release({ token: g1.token });
    const g2 = await w2;
    await s.lease.release({ token: g2.token });
    const g3 = await w3;
    expect(order).to.deep.equal(["w1", "w2", "w3"]);
    expect(g1.token!.generation > first.token!.generation).to.equal(true);
    expect(g2.token!.generation > g1.token!.generation).to.equal(true);
    expect(g3.token!.generation > g2.token!.generation).to.equal(true);
  });

  it("a waiter is granted when the holder's lease expires", async () => {
    const resource = uniqueResource("expiry-handover");
    const a = await s.lease.acquire({ resource, ttl: ttl(2), holder: "A" });
    const started = Date.now();
    const b = await s.lease.acquire({ resource, ttl: ttl(5), holder: "B", wait: true }, { timeoutMs: 10_000 });
    expect(Date.now() - started).to.be.within(500, 4000);
    expect(b.token!.generation > a.token!.generation).to.equal(true);
  });

  it("a waiter whose deadline passes gets DEADLINE_EXCEEDED and leaves no key", async () => {
    const resource = uniqueResource("deadline");
    await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
    const err = ConnectError.from(
      await s.lease.acquire({ resource, ttl: ttl(10), holder: "B", wait: true }, { timeoutMs: 800 }).catch((e) => e),
    );
    expect(err.code).to.equal(Code.DeadlineExceeded);
    await eventually(async () => (await lineKeys(resource)).length === 1, "the waiter's key is gone");
    expect((await s.lease.describe({ resource })).waiters).to.equal(0);
  });

  it("wait_timeout bounds the wait on the server side too", async () => {
    const resource = uniqueResource("wait-timeout");
    await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
    const started = Date.now();
    const err = ConnectError.from(
      await s.lease.acquire({ resource, ttl: ttl(10), holder: "B", wait: true, waitTimeout: { seconds: 1n, nanos: 0 } }).catch((e) => e),
    );
    expect(err.code).to.equal(Code.DeadlineExceeded);
    expect(err.rawMessage).to.match(/waiter's place was removed/);
    expect(Date.now() - started).to.be.within(900, 3000);
    expect(await lineKeys(resource)).to.have.length(1);
  });

  it("a waiter that cancels leaves no key", async () => {
    const resource = uniqueResource("cancel");
    await s.lease.acquire({ resource, ttl: ttl(10), holder: "A" });
    const abort = new AbortController();
    const pending = s.lease.acquire({ resource, ttl: ttl(10), holder: "B", wait: true }, { signal: abort.signal }).catch((e) => e);
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "B waits");
    abort.abort();
    expect(ConnectError.from(await pending).code).to.equal(Code.Canceled);
    await eventually(async () => (await lineKeys(resource)).length === 1, "the cancelled waiter's key is gone");
  });

  it("Observe reports the current state, then each handover, with increasing revisions", async () => {
    const resource = uniqueResource("observe");
    const abort = new AbortController();
    const seen: ObserveResponse[] = [];
    const watching = (async () => {
      try {
        for await (const ev of s.lease.observe({ resource }, { signal: abort.signal })) seen.push(ev);
      } catch {
        // ended by abort
      }
    })();
    await eventually(() => seen.length === 1, "initial state");
    expect(seen[0].held).to.equal(false);

    const a = await s.lease.acquire({ resource, ttl: ttl(5), holder: "A" });
    await eventually(() => seen.length === 2, "A's acquisition");
    const bPending = s.lease.acquire({ resource, ttl: ttl(5), holder: "B", wait: true }, { timeoutMs: 10_000 });
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 1, "B waits");
    await s.lease.release({ token: a.token });
    const b = await bPending;
    await eventually(() => seen.length === 3, "handover to B");
    await s.lease.release({ token: b.token });
    await eventually(() => seen.length === 4, "B's release");
    abort.abort();
    await watching;

    expect(seen.map((e) => [e.held, e.holder])).to.deep.equal([[false, ""], [true, "A"], [true, "B"], [false, ""]]);
    expect(seen[1].token!.generation).to.equal(a.token!.generation);
    expect(seen[2].token!.generation).to.equal(b.token!.generation);
    for (let i = 1; i < seen.length; i++) expect(seen[i].revision > seen[i - 1].revision).to.equal(true);
  });
});
