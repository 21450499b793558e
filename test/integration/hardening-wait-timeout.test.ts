// Issue 8, item 4: a wait_timeout beyond Node's longest timer (2^31 - 1 ms, about 24.8 days) used to end
// the wait after about 20 ms, with a TimeoutOverflowWarning in the server's log; a negative one was
// accepted. Now a long one waits as asked, and a negative one is INVALID_ARGUMENT.
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const THIRTY_DAYS = { seconds: 2_592_000n, nanos: 0 };

describe("hardening: wait_timeout beyond a timer's range, and below zero (issue 8, item 4)", function () {
  this.timeout(30_000);
  const s = useServer();

  it("30 days (2592000 s) on an Acquire with wait on a held resource: still waiting after 3 s, no TimeoutOverflowWarning", async () => {
    const resource = uniqueResource("long");
    const { token } = await s.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
    const ac = new AbortController();
    const settled: string[] = [];
    const started = Date.now();
    const waiter = s.lease
      .acquire({ resource, ttl: ttl(10), holder: "W", wait: true, waitTimeout: THIRTY_DAYS }, { signal: ac.signal })
      .then(
        () => settled.push(`granted after ${Date.now() - started} ms`),
        (e) => settled.push(`${Code[ConnectError.from(e).code]} after ${Date.now() - started} ms: ${(e as Error).message}`),
      );
    await eventually(async () => {
      expect(settled, "the wait ended on its own").to.deep.equal([]);
      return (await s.lease.describe({ resource })).waiters === 1;
    }, "W waits in line");
    await sleep(3000);
    expect(settled, "the wait ended on its own").to.deep.equal([]);
    expect(await s.lease.describe({ resource })).to.deep.include({ holder: "A", waiters: 1 });

    ac.abort();
    await waiter;
    expect(settled).to.have.length(1);
    expect(settled[0]).to.match(/^Canceled/);
    await eventually(async () => (await s.lease.describe({ resource })).waiters === 0, "the cancelled waiter leaves the line");
    expect(s.server.logs.filter((l) => /TimeoutOverflowWarning/.test(l))).to.deep.equal([]);

    // And when the resource is free, the same request is granted at once.
    await s.lease.release({ token });
    const granted = await s.lease.acquire({ resource, ttl: ttl(10), holder: "W", wait: true, waitTimeout: THIRTY_DAYS });
    expect(Number(granted.token!.generation)).to.be.greaterThan(Number(token!.generation));
    await s.lease.release({ token: granted.token });
  });

  it("a negative wait_timeout: INVALID_ARGUMENT, and nobody joins the line", async () => {
    const resource = uniqueResource("negative");
    const { token } = await s.lease.acquire({ resource, ttl: ttl(30), holder: "A" });
    for (const waitTimeout of [{ seconds: -1n, nanos: 0 }, { seconds: 0n, nanos: -1 }, { seconds: -2592000n, nanos: 0 }]) {
      const err = await s.lease.acquire({ resource, ttl: ttl(10), holder: "W", wait: true, waitTimeout }).then(
        () => undefined,
        (e) => ConnectError.from(e),
      );
      expect(err, `wait_timeout ${waitTimeout.seconds}s ${waitTimeout.nanos}ns was accepted`).to.not.equal(undefined);
      expect(Code[err!.code], err!.message).to.equal("InvalidArgument");
      expect(err!.rawMessage).to.contain("wait_timeout");
    }
    // Also on a free resource: refused, not granted.
    const free = uniqueResource("negative-free");
    const err = await s.lease.acquire({ resource: free, ttl: ttl(10), wait: true, waitTimeout: { seconds: -1n, nanos: 0 } }).then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(err && Code[err.code]).to.equal("InvalidArgument");
    expect(await s.lease.describe({ resource })).to.deep.include({ holder: "A", waiters: 0 });
    expect((await s.lease.describe({ resource: free })).held).to.equal(false);
    await s.lease.release({ token });
  });
});
