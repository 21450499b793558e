// A waiter keeps its place in line for as long as it waits, however often what it waits behind changes.
// The server renews the place every third of its TTL; a rhythm restarted at each change would put the
// renewal off again and again, and a waiter whose place lease runs out is out of the line.
import { expect } from "chai";
import { AcquireMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { sleep, uniqueResource, useServer } from "../harness/suite.js";

const secs = (s: number) => ({ seconds: BigInt(s), nanos: 0 });

describe("waiting: the place in line", function () {
  this.timeout(60_000);
  const s = useServer();

  it("an exclusive waiter (TTL 2 s) behind shared holders that leave one by one, newest first, every 0.4 s for 3.2 s keeps its place and is granted", async () => {
    const resource = uniqueResource("place");
    const shared = [];
    for (let i = 0; i < 8; i++) shared.push(await s.lease.acquire({ resource, ttl: secs(30), holder: `R${i}`, mode: AcquireMode.SHARED }));
    // The exclusive waiter watches the newest shared holder, and looks again each time the one it
    // watches leaves: a change of what it waits behind every 0.4 s, more often than a third of its TTL.
    const waiter = s.lease.acquire({ resource, ttl: secs(2), holder: "W", wait: true }, { timeoutMs: 30_000 });
    await sleep(300);
    for (const h of shared.reverse()) {
      await s.lease.release({ token: h.token });
      await sleep(400);
    }
    const granted = await waiter;
    expect(granted.token!.generation > shared[0].token!.generation).to.equal(true);
    const d = await s.lease.describe({ resource });
    expect(d.holder).to.equal("W");
    await s.lease.release({ token: granted.token });
  });
});
