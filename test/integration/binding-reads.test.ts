// The binding reads of renewals take turns per caller (server/lease/bindings.ts, BindingReads): a caller
// whose streams name thousands of lease ids nobody has queues its reads in its own line, and another
// caller's read goes to etcd within a turn, not behind them. Driven on the reads themselves, with a real
// etcd: the order in which etcd's answers come back is the verdict, not how long they took.
import { expect } from "chai";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { connectEtcd } from "../../server/etcd/client.js";
import { EtcdCalls } from "../../server/etcd/calls.js";
import { KeyLayout } from "../../server/etcd/keys.js";
import { Reader } from "../../server/etcd/reader.js";
import { BindingReads } from "../../server/lease/bindings.js";

describe("binding reads in turn per caller", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.destroy();
  });

  it("a bystander's read, asked after a flooder's 200 reads of 100 unknown ids each, is answered before all but a few of them", async () => {
    const client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: 10_000 });
    try {
      const reads = new BindingReads({ keys: new KeyLayout("/fk-test/"), reader: new Reader(client, new EtcdCalls()) });
      const done: string[] = [];
      const flood = Array.from({ length: 200 }, (_, i) =>
        reads.owners("flooder", Array.from({ length: 100 }, (_, j) => BigInt(1_000_000 + i * 100 + j))).then((owners) => {
          expect(owners.every((o) => o === undefined)).to.equal(true);
          done.push(`flooder ${i}`);
        }),
      );
      const bystander = reads.owners("bystander", [42n]).then((owners) => {
        expect(owners).to.deep.equal([undefined]);
        done.push("bystander");
      });
      await Promise.all([...flood, bystander]);
      const at = done.indexOf("bystander");
      console.log(`      the bystander's read came back ${at + 1}th of ${done.length}`);
      // Eight of the flooder's were at etcd when the bystander asked, one more goes before its turn, and
      // a few may come back while its own is at etcd. Without turns it was sent, and answered, last.
      expect(at).to.be.below(30);
      expect(done).to.have.length(201);
    } finally {
      client.close();
    }
  });
});
