// A transaction's reads by name: the answers come back under the names the reads were built with, in
// whatever order etcd answers a branch's operations, so that no caller counts positions.
import { expect } from "chai";
import type { IRangeResponse, IResponseOp } from "etcd3";
import { Reads, reads } from "../../server/etcd/reads.js";

const key = (k: string) => ({ key: Buffer.from(k) });
/** etcd's answer to a read: one kv, holding the key it was asked for. */
const answer = (k: Buffer | undefined): IRangeResponse => ({ header: {} as never, kvs: [{ key: k } as never], more: false, count: "1" });

describe("reads by name", () => {
  it("decodes each part under its name: one range, a list, nested reads, and reads of nothing", () => {
    const r = reads({
      owner: key("owner"),
      entries: [key("a"), key("b")],
      ahead: reads({ before: key("q/1"), delay: key("owner-delay") }).map((f) => f.before.kvs[0].key.toString()),
      session: Reads.maybe(undefined),
      place: Reads.maybe(key("q/2")),
    });
    expect(r.requests.map((q) => q.key!.toString())).to.deep.equal(["owner", "a", "b", "q/1", "owner-delay", "q/2"]);
    const found = r.decode(r.requests.map((q) => answer(q.key as Buffer)));
    expect(found.owner.kvs[0].key.toString()).to.equal("owner");
    expect(found.entries.map((e) => e.kvs[0].key.toString())).to.deep.equal(["a", "b"]);
    expect(found.ahead).to.equal("q/1");
    expect(found.session).to.equal(undefined);
    expect(found.place!.kvs[0].key.toString()).to.equal("q/2");
  });

  it("reads a transaction branch's answers from its start, and says so when they are fewer than its reads", () => {
    const r = reads({ issued: key("issued"), fence: key("fence") });
    const ops = [...r.ops(), { request_put: { key: Buffer.from("x"), value: Buffer.from("") } }];
    const responses = ops.map((o) => ({ response_range: o.request_range ? answer(o.request_range.key as Buffer) : undefined }) as unknown as IResponseOp);
    const found = r.decodeTxn(responses);
    expect(found.fence.kvs[0].key.toString()).to.equal("fence");
    expect(() => r.decodeTxn(responses.slice(0, 1))).to.throw("2 reads were answered by 1 ranges");
  });

  it("reads several parts of one shape in one transaction, each decoded from its own answers", () => {
    const one = (name: string) => reads({ owner: key(`${name}/owner`), shared: [key(`${name}/s1`), key(`${name}/s2`)], none: Reads.nothing() });
    const r = Reads.all(["a", "b", "c"].map(one));
    expect(r.requests).to.have.length(9);
    const found = r.decode(r.requests.map((q) => answer(q.key as Buffer)));
    expect(found.map((f) => f.owner.kvs[0].key.toString())).to.deep.equal(["a/owner", "b/owner", "c/owner"]);
    expect(found[2].shared.map((x) => x.kvs[0].key.toString())).to.deep.equal(["c/s1", "c/s2"]);
    expect(Reads.all([]).decode([])).to.deep.equal([]);
  });
});
