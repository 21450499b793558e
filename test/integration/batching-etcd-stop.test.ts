// etcd stopped while many writers have mutations in flight, packed into shared etcd requests: every call
// in flight answers UNAVAILABLE (ETCD_UNAVAILABLE), or succeeded; once etcd is back, every acknowledged
// call is in etcd, and every failed one is absent or whole (the ambiguous case), never half applied.
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { eventually, sleep } from "../harness/suite.js";
import { checkAllOrNothing, startStack, writeThrough } from "../harness/batching.js";

describe("batches cut off mid-flight: etcd stopped", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;

  before(async function () {
    etcd = await startEtcd();
  });
  after(async function () {
    await etcd?.destroy();
  });

  // Stopped as it runs; and frozen first (SIGSTOP), so that requests are surely in flight, then stopped
  // (SIGTERM, then SIGCONT so that it acts on it).
  for (const [name, frozen] of [
    ["stopped", false],
    ["frozen, then stopped", true],
    ["frozen, then stopped, again", true],
  ] as const) {
    it(`etcd ${name} mid-batch: every call in flight answers UNAVAILABLE or succeeded, and none is half applied`, async () => {
      const st = await startStack({ etcd, args: ["--etcd-timeout", "1000"] });
      let down = false;
      try {
        const { calls, requestsBeforeCut, callsBeforeCut } = await writeThrough(st, async () => {
          down = true;
          if (!frozen) return etcd.stop();
          etcd.pause();
          await sleep(300);
          const stopping = etcd.stop();
          etcd.resume();
          await stopping;
        });
        // Batches had formed before the stop.
        expect(requestsBeforeCut, `${requestsBeforeCut} etcd write requests for ${callsBeforeCut} calls`).to.be.below(callsBeforeCut * 0.75);
        const failed = calls.filter((c) => c.failure);
        expect(failed.length, "calls that failed").to.be.greaterThan(0);
        expect(
          failed
            .filter((c) => c.failure!.code !== Code.Unavailable || c.failure!.reason !== "ETCD_UNAVAILABLE")
            .map((c) => `${c.id}: ${c.failure!.codeName} ${c.failure!.reason} ${c.failure!.message}`),
          "failures other than UNAVAILABLE (ETCD_UNAVAILABLE)",
        ).to.deep.equal([]);

        await etcd.start();
        down = false;
        await eventually(
          () => st.store.getFence({ resource: calls[0].resource }).then(() => true, () => false),
          "the server reads from etcd again",
          20_000,
        );
        await checkAllOrNothing(st, calls);
      } finally {
        if (down) await etcd.start();
        st.kv.close();
        await st.server.stop();
      }
    });
  }
});
