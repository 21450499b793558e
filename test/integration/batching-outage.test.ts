// A server SIGKILLed while many writers have mutations in flight, packed into shared etcd requests:
// every call that was acknowledged is in etcd; every call that failed is either absent or whole (the
// ambiguous case: committed, but its answer was lost with the server), never half applied.
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { checkAllOrNothing, startStack, writeThrough } from "../harness/batching.js";

describe("batches cut off mid-flight: the server killed", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;

  before(async function () {
    etcd = await startEtcd();
  });
  after(async function () {
    await etcd?.destroy();
  });

  it("a server SIGKILLed mid-batch: every acknowledged call is in etcd, every other one whole or absent", async () => {
    const st = await startStack({ etcd });
    try {
      const { calls, requestsBeforeCut, callsBeforeCut } = await writeThrough(st, async () => {
        await st.server.stop("SIGKILL");
      });
      // Batches had formed before the kill.
      expect(requestsBeforeCut, `${requestsBeforeCut} etcd write requests for ${callsBeforeCut} calls`).to.be.below(callsBeforeCut * 0.75);
      const failed = calls.filter((c) => c.failure);
      expect(failed.length, "calls that failed").to.be.greaterThan(0);
      // A killed server answers nothing: what the client sees is its transport's failure (connect-node
      // reports a reset connection as ABORTED or CANCELED, a refused one as UNAVAILABLE), never an answer
      // of the service's own, which would carry an ErrorInfo.
      const transport = [Code.Unavailable, Code.Canceled, Code.Aborted, Code.Unknown];
      expect(
        failed
          .filter((c) => !transport.includes(c.failure!.code) || c.failure!.reason !== "")
          .map((c) => `${c.id}: ${c.failure!.codeName} ${c.failure!.reason} ${c.failure!.message}`),
        "failures other than the transport's",
      ).to.deep.equal([]);
      await checkAllOrNothing(st, calls);
    } finally {
      st.kv.close();
      await st.server.stop();
    }
  });
});
