// The binding reads of renewals take turns per caller (server/lease/bindings.ts, BindingReads): a caller
// whose streams name thousands of lease ids nobody has queues its reads in its own line, and another
// caller's read goes to etcd within a turn, not behind them. Driven on the reads themselves, with a real
// etcd: the order in which etcd's answers come back is the verdict, not how long they took.
import { expect } from "chai";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { connectEtcd } from "../../server/etcd/client.js";
import { EtcdCalls } from "../../server/etcd/calls.js";
import { encodeBinding, KeyLayout } from "../../server/etcd/keys.js";
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

  it("a caller's reads waiting together go to etcd together: 300 one-id reads (unary Renews) in a few transactions, each answered with its own owner", async () => {
    const client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: 10_000 });
    try {
      let transactions = 0;
      const calls = new EtcdCalls((what) => {
        if (what === "check binding") transactions++;
      });
      const keys = new KeyLayout("/fk-test/");
      const id = (i: number) => BigInt(5_000_000 + i);
      // Every third lease is bound, each to a principal of its own: each read must get its own answer.
      for (let i = 0; i < 300; i += 3) await client.put(keys.bindingKey(id(i))).value(encodeBinding(`p${i}`));
      const reads = new BindingReads({ keys, reader: new Reader(client, calls) });
      const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => reads.owners("renewer", [id(i)])));
      expect(answers.map((a, i) => (a.length === 1 && a[0] === (i % 3 === 0 ? `p${i}` : undefined) ? "ok" : `${i}: ${a}`)).filter((x) => x !== "ok")).to.deep.equal([]);
      // Eight go alone while nothing waits; the rest wait together, up to 100 ids a transaction.
      console.log(`      300 reads of one id in ${transactions} transactions`);
      expect(transactions).to.be.at.most(8 + 3);
    } finally {
      client.close();
    }
  });
});
