// A call cut off by the network mid-way may or may not have been applied: the SDK says so with
// UnavailableError (retry it with the same idempotency key), never with a plain ABORTED that reads as a
// refusal. Here the write commits and its answer is lost.
import { expect } from "chai";
import { FencekeeperClient, UnavailableError, type FencekeeperError } from "../../client/index.js";
import { startDelayProxy, type DelayProxy } from "../harness/delay-proxy.js";
import { useServer, sleep, uniqueResource } from "../harness/suite.js";

describe("client: a call cut off by the network mid-way", () => {
  const s = useServer();
  let proxy: DelayProxy;
  let fk: FencekeeperClient;
  beforeEach(async () => {
    proxy = await startDelayProxy(s.server.url);
    fk = new FencekeeperClient({ servers: proxy.url });
  });
  afterEach(async () => {
    await fk.close();
    await proxy.close();
  });

  it("a write whose answer is cut off is UnavailableError saying it may have been applied, and it was", async () => {
    const resource = uniqueResource("cut");
    const lease = await fk.acquire(resource, { ttl: 10_000 });
    proxy.setDelay(60_000, "toClient"); // the request reaches the server; its answer is held back
    const put = lease.put("k", "v", { idempotencyKey: `cut-${resource}` }).then(
      () => undefined,
      (e: FencekeeperError) => e,
    );
    // Wait until the write has committed (read directly, not through the proxy), then cut the connection.
    for (let i = 0; i < 200 && (await s.store.get({ resource, key: "k" })).found !== true; i++) await sleep(25);
    expect((await s.store.get({ resource, key: "k" })).found, "the write committed").to.equal(true);
    proxy.cut();
    const err = await put;
    expect(err, "the write failed on the client").to.be.instanceOf(UnavailableError);
    expect(err!.message).to.match(/may or may not have been applied/);
    // Retried with the same idempotency key once the network is back, the write is not applied twice.
    proxy.setDelay(0);
    const again = await lease.put("k", "v", { idempotencyKey: `cut-${resource}` });
    expect(again.replayed).to.equal(true);
  });
});
