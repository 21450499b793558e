// What one Describe may cost: a resource with many shared holders is described with a bounded number of
// etcd calls (the TTLs of the 100 oldest holders), however many hold it; the rest are listed and counted.
import { expect } from "chai";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { scrape } from "../operations/support/metrics.js";
import { uniqueResource, useServer } from "../harness/suite.js";

const HOLDERS = 130;
const TTL_READS = 100;

describe("Describe of a resource with many shared holders", function () {
  this.timeout(60_000);
  const s = useServer();

  /** etcd's lease time-to-live calls the server made so far (its metrics). */
  const ttlCalls = async () =>
    (await scrape(s.server)).value("fencekeeper_etcd_request_duration_seconds_count", { operation: "lease time-to-live", result: "ok" });

  it(`reads the TTLs of the ${TTL_READS} oldest of ${HOLDERS} holders only, lists them all, and counts those without a TTL`, async () => {
    const resource = uniqueResource("many-shared");
    for (let i = 0; i < HOLDERS; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          s.lease.acquire({ resource, ttl: { seconds: 30n, nanos: 0 }, holder: `reader ${i + j}`, mode: AcquireMode.SHARED }),
        ),
      );
    }
    const before = await ttlCalls();
    const d = await s.lease.describe({ resource });
    const calls = (await ttlCalls()) - before;
    expect(calls, "etcd time-to-live calls for one Describe (before: one per holder)").to.equal(TTL_READS);
    expect(d.holders).to.have.length(HOLDERS);
    expect(d.holdersWithoutTtl).to.equal(HOLDERS - TTL_READS);
    const generations = d.holders.map((h) => h.token!.generation);
    expect(generations, "oldest first").to.deep.equal([...generations].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(d.holders.slice(0, TTL_READS).every((h) => h.ttl !== undefined && h.ttl.seconds > 0n), "the oldest have their TTL").to.equal(true);
    expect(d.holders.slice(TTL_READS).every((h) => h.ttl === undefined), "the newest are listed without").to.equal(true);
  });
});
