// A holder process really paused (SIGSTOP) past its TTL: no look at its lease finds it held after
// validUntil, validUntil comes before etcd's own expiry, and a late renewal never revives it.
import { expect } from "chai";
import { FencekeeperClient } from "../../client/index.js";
import { HolderProcess } from "../../demo/holder-process.js";
import { eventually, sleep, uniqueResource, useServer, within } from "../harness/suite.js";

describe("client: a really paused holder", () => {
  const s = useServer(["--metrics-listen", "off"]);
  let holder: HolderProcess | undefined;
  let observer: FencekeeperClient;
  beforeEach(() => (observer = new FencekeeperClient({ servers: s.server.url })));
  afterEach(async () => {
    await holder?.kill();
    await observer.close();
  });

  it("sees its lease lost on its first look after the pause, and its validUntil precedes etcd's expiry", async () => {
    const ttl = 2000;
    const resource = uniqueResource("paused");
    holder = new HolderProcess(s.server.url, "A", resource, ttl);
    const acquired = await holder.next("acquired", 15_000);
    await eventually(() => holder!.seen("renewed").length > 0, "a renewal is confirmed", ttl);

    // Note the moment etcd lets go of the lease, as another client sees it.
    const stop = new AbortController();
    const expired = (async () => {
      for await (const o of observer.observe(resource, { signal: stop.signal })) if (!o.held) return Date.now();
    })();

    holder.pause();
    const pausedAt = Date.now();
    const etcdExpiredAt = await within(expired, ttl + 3000, undefined);
    stop.abort();
    expect(etcdExpiredAt, "etcd expired the paused holder's lease").to.be.a("number");
    await sleep(300);
    holder.resume();
    const resumedAt = Date.now();
    const lost = await holder.next("lost", 3000);

    const renewals = holder.seen("renewed");
    const last = renewals.at(-1)!;
    expect(lost.why).to.equal("deadline");
    // The deadline is the one the last confirmed renewal set: its send + TTL - drift. Nothing moved it.
    expect(lost.validUntil).to.be.closeTo(last.validUntil, 2);
    expect(last.validUntil).to.be.closeTo(last.sentAt + ttl - (100 + ttl / 100), 2);
    expect(renewals.every((r) => r.at < pausedAt + 50), "no renewal confirmed after the pause").to.equal(true);
    // Safe: the holder stopped assuming the lease before etcd let it go.
    expect(lost.validUntil).to.be.below(etcdExpiredAt!);
    // No look at the lease found it held at or after validUntil, and the loss was seen as soon as A ran.
    expect(lost.lastSeenHeldAt).to.be.below(lost.validUntil);
    expect(lost.at - resumedAt).to.be.below(500);
    expect(lost.at).to.be.at.least(lost.validUntil);
    expect(acquired.token.resource).to.equal(resource);
  });
});
