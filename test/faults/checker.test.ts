// The checker on small histories made by hand: a correct one passes, and each property catches the
// violation it is about (a checker that never reports anything would pass the fault runs too).
import { expect } from "chai";
import type { IKeyValue } from "etcd3";
import { check, type Property } from "./checker.js";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import { isWrite, type Op } from "./history.js";
import { idempotencyHash, Layout } from "./layout.js";

// The keys and values as the documented layout has them (server/etcd/keys.ts's comment), spelled out
// here rather than taken from the server's code.
const P = "/p/";
const R = "res";
const keys = {
  ownerKey: (r: string) => Buffer.from(`${P}r/${r}/owner`),
  fenceKey: (r: string) => Buffer.from(`${P}r/${r}/fence`),
  issuedKey: (r: string) => Buffer.from(`${P}r/${r}/issued`),
  lineKey: (r: string, lease: bigint) => Buffer.from(`${P}r/${r}/q/${lease.toString(16).padStart(16, "0")}abc`),
  dataKey: (r: string, k: string) => Buffer.from(`${P}r/${r}/d/${k}`),
  dataPrefix: (r: string) => Buffer.from(`${P}r/${r}/d/`),
  recordKey: (idem: string) => Buffer.from(`${P}i/${idempotencyHash(idem)}`),
};
const encodeGeneration = (g: bigint) => g.toString().padStart(20, "0");
const encodeOwner = (o: { holder: string; nonce: string }) => JSON.stringify(o);
const layout = new Layout(P);

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
  const r = check(ops, truth(events), layout, [R]);
  return Object.fromEntries(Object.entries(r.violations).map(([p, v]) => [p, v.count])) as Record<Property, number>;
}

const NONE: Record<Property, number> = { order: 0, lost: 0, refused: 0, live: 0, owners: 0, ambiguous: 0, refusals: 0, ttl: 0, renewals: 0, authz: 0, layout: 0, shared: 0, lockdelay: 0, sessions: 0, values: 0, observe: 0 };
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
    expect(check(ops, t, layout, [R]).violations.lost.count).to.be.greaterThan(0);
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
    // (and the Release answered ok left the owner key in place until revision 5)
    expect(violations(o, events)).to.deep.equal({ ...NONE, live: 1, owners: 1 });
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

  // Grants nobody got a token of: an Acquire whose lease ended before its answer, one through the SDK
  // that was granted on a session it then took for lost, closed, and acquired again (held by then), and a
  // failed AcquireAll's.
  const orphans: [string, Op][] = [
    ["answered LEASE_NOT_FOUND", { ...acquire("a.1", 2, A, "fail"), code: "NotFound", reason: "LEASE_NOT_FOUND" }],
    ["sent through the SDK and answered RESOURCE_HELD", { ...acquire("a.1", 2, A, "fail"), via: "sdk", code: "Aborted", reason: "RESOURCE_HELD" }],
    ["one resource of an AcquireAll answered RESOURCE_HELD (granted, then given back)", { ...acquire("a.1", 2, A, "fail"), all: `${R},other`, code: "Aborted", reason: "RESOURCE_HELD" }],
  ];
  for (const [how, orphan] of orphans) {
    it(`owners: a grant whose Acquire was ${how} ends and takes no write`, () => {
      const ended = [...events.slice(0, 2), del(keys.ownerKey(R), 5), ...events.slice(7)];
      const o = [orphan, ...ops.slice(3)];
      expect(violations(o, ended)).to.deep.equal(NONE);
      // a write under the orphan's generation, or the orphan still owning the resource at the end
      expect(violations([orphan, write("a.2", 2, A, [["k0", "a.2/0"]], "ambiguous")], events.slice(0, 4)).owners).to.be.greaterThan(0);
      expect(violations([orphan], events.slice(0, 2)).owners).to.equal(1);
    });
  }

  it("ambiguous: an ambiguous write is resolved by etcd's history, and one applied twice is caught", () => {
    const more = [...events, ...mutation(8, 6, [["k2", "b.3/0"]])];
    const o = [...ops, write("b.3", 6, B, [["k2", "b.3/0"]], "ambiguous")];
    const r = check(o, truth(more), layout, [R]);
    expect(r.writes.ambiguousCommitted).to.equal(1);
    expect(Object.values(r.violations).every((v) => v.count === 0)).to.equal(true);
    const twice = [...more, ...mutation(9, 6, [["k2", "b.3/0"]])];
    expect(violations(o, twice).ambiguous).to.equal(1);
  });

  // Wrong refusals: each refusal is judged against how etcd stood between its invocation and its answer.
  // a.2 answered at 3 and a.3 invoked after: a call between them saw revision 3 and nothing else.
  const between = (op: Op, after: Op, before: Op): Op => ({ ...op, t0: after.t1 + 0.25, t1: before.t0 - 0.25 });
  const withReason = (op: Op, code: string, reason: string): Op => ({ ...op, outcome: "fail", code, reason });

  it("refusals: a holder's second write refused STALE_TOKEN under its own fence (a fence check strict by one)", () => {
    const stale = between(write("a.9", 2, A, [["k2", "a.9/0"]], "fail"), ops[1], ops[2]);
    expect(violations([...ops.slice(0, 2), stale, ...ops.slice(2)], events)).to.deep.equal({ ...NONE, refusals: 1 });
    // The same refusal once b's write had raised the fence to 6 is right.
    expect(violations([...ops, write("a.9", 2, A, [["k2", "a.9/0"]], "fail")], events)).to.deep.equal(NONE);
  });

  it("refusals: PERMISSION_DENIED is right only where the run's policy denies; refused: a write denied by policy that etcd applied", () => {
    const denied = { ...write("b.3", 6, B, [["k2", "b.3/0"]], "fail"), code: "PermissionDenied", reason: "PERMISSION_DENIED" };
    const denies = (op: Op) => op.client === "b" && isWrite(op);
    const judge = (o: Op[], e: EtcdEvent[], d?: (op: Op) => boolean) => check(o, truth(e), layout, [R], [], d);
    expect(judge([...ops, denied], events, denies).violations.refusals.count).to.equal(0);
    expect(judge([...ops, denied], events, denies).policyRefusals).to.equal(1);
    // A server that refuses what the policy grants.
    expect(judge([...ops, denied], events).violations.refusals.count).to.equal(1);
    // A server that refuses by policy and writes anyway.
    expect(judge([...ops, denied], [...events, ...mutation(8, 6, [["k2", "b.3/0"]])], denies).violations.refused.count).to.equal(1);
  });

  it("refusals: NOT_HOLDER is right only for a token another principal acquired; refused: such a write that etcd applied", () => {
    // b.1's token was acquired by b: a write under it by another principal is rightly NOT_HOLDER, by b itself wrongly.
    const notHolder = (principal?: string): Op => ({ ...write("b.3", 6, B, [["k2", "b.3/0"]], "fail"), code: "PermissionDenied", reason: "NOT_HOLDER", ...(principal ? { principal } : {}) });
    const judge = (o: Op[], e: EtcdEvent[]) => check(o, truth(e), layout, [R]);
    expect(judge([...ops, notHolder("intruder")], events).violations.refusals.count).to.equal(0);
    expect(judge([...ops, notHolder("intruder")], events).bindingRefusals).to.equal(1);
    // A server that refuses the holder its own token.
    expect(judge([...ops, notHolder()], events).violations.refusals.count).to.equal(1);
    // A renewal of one's own lease refused NOT_HOLDER.
    const renewal: Op = { client: "b", via: "grpc", seq: 0, kind: "renew", t0: ++clock, t1: ++clock, resource: R, gen: "6", lease: String(B), outcome: "fail", code: "PermissionDenied", reason: "NOT_HOLDER" };
    expect(judge([...ops, renewal], events).violations.refusals.count).to.equal(1);
    expect(judge([...ops, { ...renewal, principal: "intruder" }], events).violations.refusals.count).to.equal(0);
    // A server that refuses by binding and writes anyway.
    expect(judge([...ops, notHolder("intruder")], [...events, ...mutation(8, 6, [["k2", "b.3/0"]])]).violations.refused.count).to.equal(1);
  });

  it("authz: a write under another principal's token, or one the policy denies, accepted or applied", () => {
    // b's write under b.1's token, made as another principal, acknowledged at revision 8.
    const events8 = [...events, ...mutation(8, 6, [["k2", "b.3/0"]])];
    const foreign = { ...write("b.3", 6, B, [["k2", "b.3/0"]], "ok", 8), principal: "intruder" };
    expect(violations([...ops, foreign], events8).authz).to.equal(1);
    // Answered ambiguous, and applied all the same.
    expect(violations([...ops, { ...write("b.3", 6, B, [["k2", "b.3/0"]], "ambiguous"), principal: "intruder" }], events8).authz).to.equal(1);
    // Denied by the policy and acknowledged.
    const mine = write("b.3", 6, B, [["k2", "b.3/0"]], "ok", 8);
    expect(check([...ops, mine], truth(events8), layout, [R], [], (op) => op.write === "b.3").violations.authz.count).to.equal(1);
    expect(check([...ops, mine], truth(events8), layout, [R]).violations.authz.count).to.equal(0);
  });

  it("refusals: ETCD_NO_SPACE only while etcd was out of space; such a write is no verdict: applied or not, etcd's history says", () => {
    const full = { ...write("b.3", 6, B, [["k2", "b.3/0"]], "fail"), code: "ResourceExhausted", reason: "ETCD_NO_SPACE" };
    const judge = (o: Op[], e: EtcdEvent[], noSpace: { start: number; end: number }[]) => check(o, truth(e), layout, [R], [], undefined, noSpace);
    const during = [{ start: full.t0 - 5, end: full.t1 + 5 }];
    expect(judge([...ops, full], events, during).violations.refusals.count).to.equal(0);
    // A server that says etcd is full when it is not.
    expect(judge([...ops, full], events, []).violations.refusals.count).to.equal(1);
    expect(judge([...ops, full], events, [{ start: full.t1 + 100, end: full.t1 + 200 }]).violations.refusals.count).to.equal(1);
    // Not applied, or applied all the same (etcd applies a write it takes as it crosses its quota, and
    // answers NOSPACE): an ambiguous write, resolved by the history.
    const none = judge([...ops, full], events, during);
    expect(none.writes.ambiguousNotCommitted).to.equal(1);
    const applied = judge([...ops, full], [...events, ...mutation(8, 6, [["k2", "b.3/0"]])], during);
    expect(applied.violations.refused.count).to.equal(0);
    expect(applied.writes.ambiguousCommitted).to.equal(1);
  });

  it("renewals: a lease reported gone before its TTL ran out from a renewal answered ok", () => {
    const t = 1_000_000;
    const acq: Op = { ...acquire("b.1", 6, B), t0: t, t1: t + 10, ttlMs: 2_000 };
    const renew = (t0: number, t1: number, outcome: Op["outcome"]): Op => ({
      client: "b", via: "grpc", seq: 0, kind: "renew", t0, t1, resource: R, gen: "6", lease: String(B), outcome, ...(outcome === "fail" ? { code: "NotFound", reason: "LEASE_NOT_FOUND" } : {}),
    });
    const base = [ops[0], ops[1], ops[2], acq, ops[4]];
    // Renewed at t+1000: the lease lives until t+3000 at least; gone at t+1500 is early, at t+3500 is not.
    expect(violations([...base, renew(t + 1_000, t + 1_010, "ok"), renew(t + 1_400, t + 1_500, "fail")], events).renewals).to.equal(1);
    expect(violations([...base, renew(t + 1_000, t + 1_010, "ok"), renew(t + 3_400, t + 3_500, "fail")], events).renewals).to.equal(0);
    // Released before: gone on purpose.
    const release: Op = { client: "b", via: "grpc", seq: 0, kind: "release", t0: t + 1_100, t1: t + 1_200, resource: R, gen: "6", lease: String(B), outcome: "ok" };
    expect(violations([...base, renew(t + 1_000, t + 1_010, "ok"), release, renew(t + 1_400, t + 1_500, "fail")], events).renewals).to.equal(0);
  });

  it("preemption: its fence raise explains itself, a renewal answered PREEMPTED needs the preemption's marker, and nobody else is granted while it hands over", () => {
    const delayKey = Buffer.from(`${P}r/${R}/owner-delay`);
    const PREEMPTING = JSON.stringify({ seconds: 0, preempting: true });
    // a.1 holds from 2 and writes at 3; b.1 preempts at 4 (a's owner key gone, the fence raised past
    // generation 2, the marker on b's lease); b.1 is granted at 5 and writes at 6.
    const pre = [
      ...grant("a.1", 2, A),
      put(keys.fenceKey(R), encodeGeneration(0n), 2),
      ...mutation(3, 2, [["k0", "a.2/0"]]),
      del(keys.ownerKey(R), 4),
      put(keys.fenceKey(R), encodeGeneration(3n), 4, 2),
      put(delayKey, PREEMPTING, 4, 4, B),
      ...grant("b.1", 5, B),
      del(delayKey, 5),
      ...mutation(6, 5, [["k1", "b.2/0"]]),
    ];
    const preOps = [acquire("a.1", 2, A), write("a.2", 2, A, [["k0", "a.2/0"]], "ok", 3), { ...acquire("b.1", 5, B), preempt: true }, write("b.2", 5, B, [["k1", "b.2/0"]], "ok", 6)];
    const renewal: Op = { client: "a", via: "grpc", seq: 0, kind: "renew", t0: ++clock, t1: ++clock, resource: R, outcome: "fail", code: "FailedPrecondition", reason: "PREEMPTED", gen: "2", lease: String(A) };
    expect(violations([...preOps, renewal], pre)).to.deep.equal(NONE);
    // PREEMPTED where a's key went by expiry (no marker): a wrong refusal.
    const expired = pre.filter((e) => !e.kv.key.equals(delayKey));
    expect(violations([...preOps, renewal], expired).refusals).to.equal(1);
    // ... unless a's lease is a session's, and its holding of another resource was preempted: the record
    // is on the lease, and a session's lease is preempted whole.
    const otherResource = put(Buffer.from(`${P}x/${A.toString(16).padStart(16, "0")}`), JSON.stringify({ resource: "other", generation: "1", byGeneration: "0", byPrincipal: "b" }), 4, 4, A);
    expect(violations([...preOps, renewal], [...expired.slice(0, 4), otherResource, ...expired.slice(4)]).refusals).to.equal(0);
    // A preemption refused because the holder asked for a lock-delay: right only if it had.
    const refusedPreempt: Op = { ...between({ ...acquire("c.1", 0, 0n, "fail"), preempt: true, code: "FailedPrecondition" }, ops[1], ops[2]), reason: undefined };
    expect(violations([ops[0], ops[1], refusedPreempt, ...ops.slice(2)], events).refusals).to.equal(1);
    expect(violations([{ ...ops[0], lockDelayMs: 1_000 }, ops[1], refusedPreempt, ...ops.slice(2)], events).refusals).to.equal(0);
    // Another holder granted while the marker was there.
    const slipped = [...pre.slice(0, 7), ...grant("c.1", 5, 11n), del(delayKey, 7)];
    expect(violations([...preOps.slice(0, 2), acquire("c.1", 5, 11n)], slipped).owners).to.be.greaterThan(0);
  });

  it("refusals: LEASE_NOT_HELD while the lease held it, and NOT_FOUND on Release of a lease still there", () => {
    const notHeld = between(withReason(write("a.9", 2, A, [["k2", "a.9/0"]], "fail"), "FailedPrecondition", "LEASE_NOT_HELD"), ops[1], ops[2]);
    expect(violations([...ops.slice(0, 2), notHeld, ...ops.slice(2)], events)).to.deep.equal({ ...NONE, refusals: 1 });
    const release: Op = between({ client: "a", via: "grpc", seq: 0, kind: "release", t0: 0, t1: 0, resource: R, outcome: "fail", code: "NotFound", reason: "LEASE_NOT_FOUND", gen: "2", lease: String(A) }, ops[1], ops[2]);
    expect(violations([...ops.slice(0, 2), release, ...ops.slice(2)], events)).to.deep.equal({ ...NONE, refusals: 1 });
    // After a's owner key went (revision 5), both are right.
    const late = [withReason(write("a.9", 2, A, [["k2", "a.9/0"]], "fail"), "FailedPrecondition", "LEASE_NOT_HELD"), { ...release, t0: ++clock, t1: ++clock }];
    expect(violations([...ops, ...late], events)).to.deep.equal(NONE);
  });

  it("refusals: RESOURCE_HELD when nobody held or waited for the resource", () => {
    // b's owner key goes at 8, then b writes under ORDER at 9 (acknowledged): c's Acquire after that saw nobody.
    const evs = [...events, del(keys.ownerKey(R), 8), ...mutation(9, 6, [["k1", "b.3/0"]])];
    const o = [...ops, write("b.3", 6, B, [["k1", "b.3/0"]], "ok", 9, "order"), acquire("c.1", 0, 0n, "fail")];
    expect(violations(o, evs)).to.deep.equal({ ...NONE, refusals: 1 });
    // A waiter of another acquisition in line justifies it.
    const waiting = [...evs, put(keys.lineKey(R, 12n), JSON.stringify({ holder: "d.1" }), 10, 10, 12n)];
    expect(violations(o, waiting)).to.deep.equal(NONE);
  });

  it("ttl: a lease that outlives the TTL its Acquire asked for", () => {
    // b asked for 2 s and never renewed; its owner key is still there 30 s later.
    const bAcq = { ...ops[3], ttlMs: 2_000 };
    const later = { ...acquire("c.1", 0, 0n, "fail"), t0: bAcq.t1 + 30_000, t1: bAcq.t1 + 30_001 };
    const o = [...ops.slice(0, 3), bAcq, ops[4], later];
    expect(violations(o, events)).to.deep.equal({ ...NONE, ttl: 1 });
    // Unless etcd was restarted meanwhile (it renews every lease to its full TTL), or b renewed it.
    expect(check(o, truth(events), layout, [R], [{ start: bAcq.t1 + 1_000, end: bAcq.t1 + 12_000 }]).violations.ttl.count).to.equal(0);
    const renew: Op = { client: "b", via: "grpc", seq: 0, kind: "renew", t0: bAcq.t1 + 12_000, t1: bAcq.t1 + 12_001, resource: R, outcome: "ok", gen: "6", lease: String(B) };
    expect(violations([...o, renew], events).ttl).to.equal(0);
  });

  it("live: after an owner key is overwritten, LIVE writes are judged against the holder it names", () => {
    // a's owner key is overwritten at 4 (lease B); a's LIVE write at 5 is then not its owner's.
    const evs = [...events.slice(0, 3), put(keys.ownerKey(R), encodeOwner({ holder: "b.1", nonce: "n" }), 4, 2, B), ...mutation(5, 2, [["k0", "a.3/0"]])];
    const o = [acquire("a.1", 2, A), write("a.2", 2, A, [["k0", "a.2/0"]], "ok", 3), write("a.3", 2, A, [["k0", "a.3/0"]], "ok", 5)];
    const v = violations(o, evs);
    expect(v.owners).to.equal(1);
    expect(v.live).to.equal(1);
  });

  it("ambiguous: a retried delete of an absent key applied twice (told by its idempotency record)", () => {
    const once = [...events, ...mutation(8, 6, []), put(keys.recordKey("w-b.3"), '{"fingerprint":"f","fence":"6"}', 8)];
    const o = [...ops, { ...write("b.3", 6, B, [["k9", null]], "ambiguous"), idem: "w-b.3" }];
    expect(violations(o, once)).to.deep.equal(NONE);
    const twice = [...once, ...mutation(9, 6, []), put(keys.recordKey("w-b.3"), '{"fingerprint":"f","fence":"6"}', 9)];
    expect(violations(o, twice).ambiguous).to.equal(1);
  });

  it("layout: a key or a value the documented layout does not describe (a layout change in the server)", () => {
    // the fence written without its padding, the owner key under another name, an owner value in another format
    const unpadded = events.map((e) => (e.kv.key.equals(keys.fenceKey(R)) ? put(keys.fenceKey(R), String(Number(e.kv.value.toString())), Number(e.rev), 2) : e));
    expect(violations(ops, unpadded).layout).to.be.greaterThan(0);
    const renamed = events.map((e) => (e.kv.key.equals(keys.ownerKey(R)) ? { ...e, kv: { ...e.kv, key: Buffer.from(`${P}r/${R}/holder`) } } : e));
    expect(violations(ops, renamed).layout).to.be.greaterThan(0);
    const other = events.map((e) => (e.kv.key.equals(keys.ownerKey(R)) && e.type === "put" ? put(keys.ownerKey(R), "a.1", Number(e.rev), Number(e.rev), BigInt(e.kv.lease)) : e));
    expect(violations(ops, other).layout).to.be.greaterThan(0);
  });

  it("layout: a usage key with its payer's tag, and a principal's store ledger, are the layout's; a usage in another format is not", () => {
    const usage = Buffer.from(`${P}r/${R}/usage`);
    const ledger = Buffer.from(`${P}w/0123456789abcdef`);
    const paid = [...events, put(usage, "123 0123456789abcdef", 90), put(ledger, "123", 90)];
    expect(violations(ops, paid).layout).to.equal(0);
    expect(violations(ops, [...events, put(usage, "123 alice", 90)]).layout).to.equal(1);
  });

  const sharedKey = (r: string, lease: bigint) => Buffer.from(`${P}r/${r}/s/${lease.toString(16).padStart(16, "0")}`);
  const sharedAcquire = (holder: string, gen: number, lease: bigint, r = R, maxHolders?: number): Op => ({ ...acquire(holder, gen, lease), resource: r, shared: true, maxHolders });

  it("shared: a shared holder beside the exclusive one", () => {
    // b holds R exclusively from 6 on; c is granted a shared holding at 8.
    const evs = [...events, put(sharedKey(R, 12n), JSON.stringify({ holder: "c.1", nonce: "n" }), 8, 8, 12n)];
    expect(violations([...ops, sharedAcquire("c.1", 8, 12n)], evs)).to.deep.equal({ ...NONE, shared: 1 });
  });

  it("shared: more semaphore holders than its permits", () => {
    const S = "sem";
    const permit = (holder: string, rev: number, lease: bigint) => put(sharedKey(S, lease), JSON.stringify({ maxHolders: 2, holder, nonce: "n" }), rev, rev, lease);
    const o = [...ops, sharedAcquire("s.1", 8, 21n, S, 2), sharedAcquire("s.2", 9, 22n, S, 2), sharedAcquire("s.3", 11, 23n, S, 2)];
    const two = [...events, permit("s.1", 8, 21n), permit("s.2", 9, 22n), del(sharedKey(S, 21n), 10), permit("s.3", 11, 23n)];
    expect(check(o, truth(two), layout, [R, S]).violations.shared.count).to.equal(0);
    const three = [...events, permit("s.1", 8, 21n), permit("s.2", 9, 22n), permit("s.3", 11, 23n)];
    expect(check(o, truth(three), layout, [R, S]).violations.shared.count).to.equal(1);
  });

  it("lockdelay: a grant while the lock-delay of the holder before is in force", () => {
    // a's grant at 2 puts a lock-delay, which lasts until 8: b's grant at 6 is too early.
    const delay = Buffer.from(`${P}r/${R}/owner-delay`);
    const evs = [...events.slice(0, 1), put(delay, '{"seconds":1}', 2, 2, 99n), ...events.slice(1), del(delay, 8)];
    expect(violations(ops, evs)).to.deep.equal({ ...NONE, lockdelay: 1 });
    const ended = [...events.slice(0, 1), put(delay, '{"seconds":1}', 2, 2, 99n), ...events.slice(1, 6), del(delay, 5), ...events.slice(6)];
    expect(violations(ops, ended)).to.deep.equal(NONE);
  });

  it("sessions: a CloseSession answered ok that left an acquisition on it, or answered NOT_FOUND while it was open", () => {
    // b's lease B is a session (its key put at 1); b's owner key on it stays to the end.
    const sessionKey = Buffer.from(`${P}s/${B.toString(16).padStart(16, "0")}`);
    const evs = [put(sessionKey, "", 1, 1, B), ...events];
    const close = (outcome: Op["outcome"]): Op => ({ client: "b", via: "grpc", seq: 0, kind: "close-session", t0: ++clock, t1: ++clock, resource: "", outcome, session: String(B), lease: String(B), ...(outcome === "fail" ? { code: "NotFound", reason: "LEASE_NOT_FOUND" } : {}) });
    expect(violations([...ops, close("ok")], evs).sessions).to.equal(2);
    expect(violations([...ops, close("fail")], evs).sessions).to.equal(1);
    // Closed for real: the session's key and b's owner key go at 8.
    const closed = [...evs, del(keys.ownerKey(R), 8), del(sessionKey, 8)];
    expect(violations([...ops, close("ok")], closed)).to.deep.equal(NONE);
  });

  it("refusals: ALREADY_ACQUIRED when the session neither held nor waited for the resource", () => {
    const again: Op = { ...acquire("b.9", 0, 0n, "fail"), code: "AlreadyExists", reason: "ALREADY_ACQUIRED", session: String(B) };
    // b's owner key (on lease B, its session) is there to the end: right.
    expect(violations([...ops, again], events)).to.deep.equal(NONE);
    // Gone at 8, and b's ORDER write at 9 was answered before the call: wrong.
    const evs = [...events, del(keys.ownerKey(R), 8), ...mutation(9, 6, [["k1", "b.3/0"]])];
    const o = [...ops, write("b.3", 6, B, [["k1", "b.3/0"]], "ok", 9, "order"), { ...again, t0: ++clock, t1: ++clock }];
    expect(violations(o, evs)).to.deep.equal({ ...NONE, refusals: 1 });
  });

  it("values: a Proclaim sets its value at its revision while its generation holds; a refused one sets nothing; a grant publishes what its Acquire sent", () => {
    const ownerWith = (holder: string, v: string) => `${encodeOwner({ holder, nonce: "n" })}\n${v}`;
    const proclaim = (value: string, gen: number, lease: bigint, outcome: Op["outcome"], rev?: number): Op => ({
      client: value.split(".")[0], via: "grpc", seq: 0, kind: "proclaim", t0: ++clock, t1: ++clock, resource: R, outcome, gen: String(gen), lease: String(lease), value,
      ...(outcome === "ok" ? { rev: String(rev) } : { code: "FailedPrecondition", reason: "STALE_TOKEN" }),
    });
    // a.1 (generation 2) proclaims a.5/v at 3; its key goes at 5; b.1 is granted 6 (the issued key with it).
    const evs = [
      ...grant("a.1", 2, A), put(keys.issuedKey(R), "2", 2), put(keys.fenceKey(R), encodeGeneration(0n), 2),
      put(keys.ownerKey(R), ownerWith("a.1", "a.5/v"), 3, 2, A),
      del(keys.ownerKey(R), 5), ...grant("b.1", 6, B), put(keys.issuedKey(R), "6", 6),
    ];
    const a = acquire("a.1", 2, A);
    const p = proclaim("a.5/v", 2, A, "ok", 3);
    const b = acquire("b.1", 6, B);
    expect(violations([a, p, b], evs)).to.deep.equal(NONE);
    // Answered ok at another revision; refused and yet set; set by nobody's Proclaim.
    expect(violations([a, { ...p, rev: "4" }, b], evs)).to.deep.equal({ ...NONE, values: 1 });
    expect(violations([a, { ...p, outcome: "fail", code: "FailedPrecondition", reason: "LEASE_NOT_HELD", rev: undefined }, b], evs)).to.deep.equal({ ...NONE, values: 1 });
    expect(violations([a, b], evs)).to.deep.equal({ ...NONE, values: 1 });
    // A deposed leader's Proclaim that set the value of the leader after it (a check that ignored the generation).
    const deposed = [...evs, put(keys.ownerKey(R), ownerWith("b.1", "a.7/v"), 7, 6, B)];
    expect(violations([a, p, b, proclaim("a.7/v", 2, A, "ok", 7)], deposed)).to.deep.equal({ ...NONE, values: 1 });
    // Refused STALE_TOKEN: right once b.1 was issued, wrong while a.1 still held (a check strict by one).
    expect(violations([a, p, b, proclaim("a.8/v", 2, A, "fail")], evs)).to.deep.equal(NONE);
    expect(violations([a, between(proclaim("a.8/v", 2, A, "fail"), a, p), p, b], evs)).to.deep.equal({ ...NONE, refusals: 1 });
    // A grant that does not publish what its Acquire sent.
    expect(violations([{ ...a, value: "a.1" }, p, b], evs)).to.deep.equal({ ...NONE, values: 1 });
  });

  it("observe: a follower told a holder, a value or nobody that etcd's history does not show at that revision, or revisions out of order", () => {
    const ownerWith = (holder: string, v: string) => `${encodeOwner({ holder, nonce: "n" })}\n${v}`;
    // a.1 (generation 2) publishes a.1 at its grant and proclaims a.5/v at 3; its key goes at 5; b.1 is granted 6.
    const evs = [
      put(keys.ownerKey(R), ownerWith("a.1", "a.1"), 2, 2, A), put(keys.fenceKey(R), encodeGeneration(0n), 2),
      put(keys.ownerKey(R), ownerWith("a.1", "a.5/v"), 3, 2, A),
      del(keys.ownerKey(R), 5), ...grant("b.1", 6, B),
    ];
    const a: Op = { ...acquire("a.1", 2, A), value: "a.1" };
    const p: Op = { client: "a", via: "grpc", seq: 0, kind: "proclaim", t0: ++clock, t1: ++clock, resource: R, outcome: "ok", gen: "2", lease: String(A), value: "a.5/v", rev: "3" };
    const b = acquire("b.1", 6, B);
    const seen = (rev: number, holder?: { gen: number; lease: bigint; value: string }, stream = "c.1"): Op => ({
      client: "c", via: "grpc", seq: 0, kind: "observe", t0: 0, t1: ++clock, resource: R, outcome: "ok", stream, rev: String(rev), held: holder !== undefined,
      ...(holder ? { gen: String(holder.gen), lease: String(holder.lease), value: holder.value } : {}),
    });
    const right = [seen(2, { gen: 2, lease: A, value: "a.1" }), seen(3, { gen: 2, lease: A, value: "a.5/v" }), seen(5), seen(6, { gen: 6, lease: B, value: "" })];
    expect(violations([a, p, b, ...right], evs)).to.deep.equal(NONE);
    // The old value at the Proclaim's revision; a holder gone; nobody while b.1 held; a revision again on a stream.
    expect(violations([a, p, b, seen(3, { gen: 2, lease: A, value: "a.1" })], evs)).to.deep.equal({ ...NONE, observe: 1 });
    expect(violations([a, p, b, seen(5, { gen: 2, lease: A, value: "a.5/v" })], evs)).to.deep.equal({ ...NONE, observe: 1 });
    expect(violations([a, p, b, seen(7)], evs)).to.deep.equal({ ...NONE, observe: 1 });
    expect(violations([a, p, b, seen(3, { gen: 2, lease: A, value: "a.5/v" }), seen(3, { gen: 2, lease: A, value: "a.5/v" })], evs)).to.deep.equal({ ...NONE, observe: 1 });
  });
});
