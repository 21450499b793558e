// The checker on small histories made by hand: a correct one passes, and each property catches the
// violation it is about (a checker that never reports anything would pass the fault runs too).
import { expect } from "chai";
import type { IKeyValue } from "etcd3";
import { encodeGeneration, encodeOwner, KeyLayout } from "../../server/etcd/keys.js";
import { check, type Property } from "./checker.js";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import type { Op } from "./history.js";

const keys = new KeyLayout("/p/");
const R = "res";

function kv(key: Buffer, value: Buffer, rev: number, create = rev, lease = 0n): IKeyValue {
  return { key, value, create_revision: String(create), mod_revision: String(rev), version: "1", lease: String(lease) };
}
const put = (key: Buffer, value: Buffer | string, rev: number, create = rev, lease = 0n): EtcdEvent => ({ type: "put", rev: BigInt(rev), kv: kv(key, Buffer.from(value), rev, create, lease) });
const del = (key: Buffer, rev: number): EtcdEvent => ({ type: "delete", rev: BigInt(rev), kv: kv(key, Buffer.alloc(0), rev, 0) });

/** A grant of R to holder at rev, on lease. */
const grant = (holder: string, rev: number, lease: bigint): EtcdEvent[] => [put(keys.ownerKey(R), encodeOwner({ holder, nonce: "n" }), rev, rev, lease)];
/** A mutation at rev under generation gen: its data changes and the fence. */
const mutation = (rev: number, gen: number, changes: [string, string | null][]): EtcdEvent[] => [
  ...changes.map(([k, v]) => (v === null ? del(keys.dataKey(R, k), rev) : put(keys.dataKey(R, k), v, rev))),
  put(keys.fenceKey(R), encodeGeneration(BigInt(gen)), rev, 2),
];

let clock = 0;
const acquire = (holder: string, gen: number, lease: bigint, outcome: Op["outcome"] = "ok"): Op => ({
  client: holder.split(".")[0], via: "grpc", seq: 0, kind: "acquire", t0: ++clock, t1: ++clock, resource: R, outcome, holder,
  ...(outcome === "ok" ? { gen: String(gen), lease: String(lease) } : { code: "FailedPrecondition", reason: "RESOURCE_HELD" }),
});
const write = (id: string, gen: number, lease: bigint, effects: [string, string | null][], outcome: Op["outcome"], rev?: number, mode: "order" | "live" = "live"): Op => ({
  client: id.split(".")[0], via: "grpc", seq: 0, kind: effects.length > 1 ? "txn" : effects[0][1] === null ? "delete" : "put", t0: ++clock, t1: ++clock,
  resource: R, outcome, gen: String(gen), lease: String(lease), mode, write: id, attempt: 0, effects,
  ...(outcome === "ok" ? { rev: String(rev) } : outcome === "fail" ? { code: "FailedPrecondition", reason: "STALE_TOKEN" } : { code: "Unavailable" }),
});

/** The final contents as the events leave them. */
function truth(events: EtcdEvent[]): EtcdTruth {
  const final = new Map<string, IKeyValue>();
  for (const e of events) {
    if (!e.kv.key.toString().startsWith(keys.dataPrefix(R).toString())) continue;
    if (e.type === "put") final.set(e.kv.key.toString(), e.kv);
    else final.delete(e.kv.key.toString());
  }
  return { events, final: [...final.values()], revision: BigInt(events.length + 10) };
}

function violations(ops: Op[], events: EtcdEvent[]): Record<Property, number> {
  const r = check(ops, truth(events), keys, [R]);
  return Object.fromEntries(Object.entries(r.violations).map(([p, v]) => [p, v.count])) as Record<Property, number>;
}

const NONE: Record<Property, number> = { order: 0, lost: 0, refused: 0, live: 0, owners: 0, ambiguous: 0 };
const A = 7n;
const B = 9n;

describe("faults: the checker", () => {
  // a.1 is granted generation 2 and writes k0 at 3 and deletes it at 4; b.1 is granted 6 after a's
  // lease ended at 5, and writes k1 at 7.
  const events = [
    ...grant("a.1", 2, A),
    put(keys.fenceKey(R), encodeGeneration(0n), 2),
    ...mutation(3, 2, [["k0", "a.2/0"]]),
    ...mutation(4, 2, [["k0", null]]),
    del(keys.ownerKey(R), 5),
    ...grant("b.1", 6, B),
    ...mutation(7, 6, [["k1", "b.2/0"]]),
  ];
  const ops = [
    acquire("a.1", 2, A),
    write("a.2", 2, A, [["k0", "a.2/0"]], "ok", 3),
    write("a.3", 2, A, [["k0", null]], "ok", 4),
    acquire("b.1", 6, B),
    write("b.2", 6, B, [["k1", "b.2/0"]], "ok", 7),
  ];

  it("finds nothing wrong with a correct history", () => {
    expect(violations(ops, events)).to.deep.equal(NONE);
  });

  it("lost: an acknowledged write that etcd does not have", () => {
    expect(violations([...ops, write("b.3", 6, B, [["k2", "b.3/0"]], "ok", 8)], events).lost).to.be.greaterThan(0);
  });

  it("lost: a final state that is not the last committed write", () => {
    const t = truth(events);
    t.final = [];
    expect(check(ops, t, keys, [R]).violations.lost.count).to.be.greaterThan(0);
  });

  it("refused: a write answered STALE_TOKEN that etcd applied", () => {
    const more = [...events, ...mutation(8, 6, [["k2", "b.3/0"]])];
    expect(violations([...ops, write("b.3", 6, B, [["k2", "b.3/0"]], "fail")], more).refused).to.equal(1);
  });

  it("refused: a change that no write of the history made", () => {
    expect(violations(ops, [...events, ...mutation(8, 6, [["k2", "x.9/0"]])]).refused).to.be.greaterThan(0);
  });

  it("live: a LIVE write that committed after its lease was gone", () => {
    // a's lease ends at 5 (its owner key deleted), and a LIVE write of a's generation commits at 6.
    const evs = [...events.slice(0, 6), del(keys.ownerKey(R), 5), ...mutation(6, 2, [["k3", "a.4/0"]]), ...grant("b.1", 7, B), ...mutation(8, 7, [["k1", "b.2/0"]])];
    const o = [acquire("a.1", 2, A), ops[1], ops[2], write("a.4", 2, A, [["k3", "a.4/0"]], "ambiguous"), acquire("b.1", 7, B), write("b.2", 7, B, [["k1", "b.2/0"]], "ok", 8)];
    const v = violations(o, evs);
    expect(v.live).to.equal(1);
    expect(v.order).to.equal(0);
  });

  it("live: a LIVE write accepted after its Release was answered", () => {
    // etcd's history alone is fine (a's owner key goes at 5, after its delete at 4); the answers are not:
    // the delete was invoked after the Release had been answered.
    const release: Op = { client: "a", via: "grpc", seq: 0, kind: "release", t0: ++clock, t1: ++clock, resource: R, outcome: "ok", gen: "2", lease: String(A) };
    const o = [ops[0], ops[1], release, write("a.3", 2, A, [["k0", null]], "ok", 4), ...ops.slice(3)];
    expect(violations(o, events)).to.deep.equal({ ...NONE, live: 1 });
  });

  it("order: a write of an older generation after a newer one wrote", () => {
    const more = [...events, ...mutation(8, 2, [["k2", "a.4/0"]])];
    const v = violations([...ops, write("a.4", 2, A, [["k2", "a.4/0"]], "ok", 8, "order")], more);
    expect(v.order).to.be.greaterThan(0);
  });

  it("owners: an acknowledged grant that etcd does not show, and grants out of real-time order", () => {
    expect(violations([...ops, acquire("c.1", 10, 11n)], events).owners).to.be.greaterThan(0);
    // b.1 was invoked after a.1 was answered, yet has the smaller generation.
    const swapped = [acquire("b.1", 6, B), acquire("a.1", 2, A), ...ops.filter((o) => o.kind !== "acquire")];
    expect(violations(swapped, events).owners).to.be.greaterThan(0);
  });

  it("owners: a grant to an Acquire that was refused", () => {
    expect(violations([acquire("a.1", 2, A, "fail"), ...ops.slice(1)], events).owners).to.be.greaterThan(0);
  });

  it("owners: a grant whose Acquire was answered LEASE_NOT_FOUND ends with its lease and takes no write", () => {
    const orphan: Op = { ...acquire("a.1", 2, A, "fail"), code: "NotFound", reason: "LEASE_NOT_FOUND" };
    const ended = [...events.slice(0, 2), del(keys.ownerKey(R), 5), ...events.slice(7)];
    const o = [orphan, ...ops.slice(3)];
    expect(violations(o, ended)).to.deep.equal(NONE);
    // a write under the orphan's generation, or the orphan still owning the resource at the end
    expect(violations([orphan, write("a.2", 2, A, [["k0", "a.2/0"]], "ambiguous")], events.slice(0, 4)).owners).to.be.greaterThan(0);
    expect(violations([orphan], events.slice(0, 2)).owners).to.equal(1);
  });

  it("ambiguous: an ambiguous write is resolved by etcd's history, and one applied twice is caught", () => {
    const more = [...events, ...mutation(8, 6, [["k2", "b.3/0"]])];
    const o = [...ops, write("b.3", 6, B, [["k2", "b.3/0"]], "ambiguous")];
    const r = check(o, truth(more), keys, [R]);
    expect(r.writes.ambiguousCommitted).to.equal(1);
    expect(Object.values(r.violations).every((v) => v.count === 0)).to.equal(true);
    const twice = [...more, ...mutation(9, 6, [["k2", "b.3/0"]])];
    expect(violations(o, twice).ambiguous).to.equal(1);
  });
});
