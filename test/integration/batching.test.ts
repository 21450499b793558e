// Batching never changes an answer: the group committer packs concurrent mutations into one etcd request
// (nested transactions, one inner transaction per resource and token), and every caller must still get
// exactly what it would have got alone. Each test runs enough concurrent calls that batches form, and
// checks through /metrics that they did (fewer etcd write requests than calls), and that etcd refused
// none of the server's requests where nothing should be refused.
import { expect } from "chai";
import { Code } from "@connectrpc/connect";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { uniqueResource, eventually, sleep } from "../harness/suite.js";
import {
  bytes,
  delta,
  etcdRevision,
  failureOf,
  historyOf,
  layout,
  startStack,
  text,
  ttl,
  workers,
  writeCounts,
  type Failure,
  type Stack,
} from "../harness/batching.js";

describe("batching never changes an answer", function () {
  this.timeout(60_000);
  let st: Stack;

  before(async function () {
    st = await startStack();
  });
  after(async function () {
    st?.kv.close();
    await st?.server.stop();
    await st?.etcd.destroy();
  });

  async function acquire(resource: string, holder: string, seconds = 30): Promise<FencingToken> {
    return (await st.lease.acquire({ resource, ttl: ttl(seconds), holder })).token!;
  }

  /** One write as issued and answered. */
  interface Call {
    id: string;
    generation: bigint;
    keys: string[];
    value: string;
    revision?: bigint;
    failure?: Failure;
  }

  /** A Put (one key) or a Txn (several) of the same value to every key; its outcome is recorded. */
  async function write(resource: string, token: FencingToken, mode: FenceMode, id: string, keys: string[], calls: Call[]): Promise<Call> {
    const value = `${token.generation}:${id}`;
    const call: Call = { id, generation: token.generation, keys, value };
    const mutation = { token, mode };
    try {
      const res =
        keys.length === 1
          ? await st.store.put({ resource, key: keys[0], value: bytes(value), mutation })
          : await st.store.txn({ resource, mutation, ops: keys.map((key) => ({ op: { case: "put" as const, value: { key, value: bytes(value) } } })) });
      expect(res.commit!.replayed, `${id} replayed`).to.equal(false);
      expect(res.commit!.fence, `${id}: the fence it set`).to.equal(token.generation);
      call.revision = res.commit!.revision;
    } catch (e) {
      call.failure = failureOf(e);
    }
    calls.push(call);
    return call;
  }

  const pick = (from: string[], n: number) => {
    const left = [...from];
    return Array.from({ length: n }, () => left.splice(Math.floor(Math.random() * left.length), 1)[0]);
  };

  for (const [modeName, mode] of [
    ["ORDER", FenceMode.ORDER],
    ["LIVE", FenceMode.LIVE],
  ] as const) {
    it(`mixed generations writing one resource concurrently (${modeName}): no write of the old generation lands after the first of the new`, async () => {
      const resource = uniqueResource(`mixed-${modeName}`);
      const L = layout(st.prefix);
      const keys = Array.from({ length: 32 }, (_, i) => `k${i}`);
      const from = await etcdRevision(st.kv);
      const before = await writeCounts(st.server);
      const calls: Call[] = [];

      const g1 = await acquire(resource, "A");
      let g2: FencingToken | undefined;
      let g2Done = false;
      const g1Writers = workers(12, async (w, round) => {
        await write(resource, g1, mode, `g1-${w}-${round}`, pick(keys, round % 3 === 0 ? 3 : 1), calls);
        return !g2Done;
      });
      // The next holder queues while the first writes; the first releases, the second is granted and writes
      // while the first's writers go on with their old token.
      await eventually(() => calls.filter((c) => c.revision !== undefined).length >= 40, "the first generation has written", 20_000);
      const granted = st.lease.acquire({ resource, ttl: ttl(30), holder: "B", wait: true });
      await eventually(async () => (await st.lease.describe({ resource })).waiters === 1, "B waits in line", 10_000);
      await st.lease.release({ token: g1 });
      g2 = (await granted).token!;
      expect(g2.generation > g1.generation).to.equal(true);
      const g2Writers = workers(12, async (w, round) => {
        await write(resource, g2!, mode, `g2-${w}-${round}`, pick(keys, round % 3 === 0 ? 3 : 1), calls);
        return round < 14;
      });
      await g2Writers;
      g2Done = true;
      await g1Writers;

      const old = calls.filter((c) => c.generation === g1.generation);
      const cur = calls.filter((c) => c.generation === g2!.generation);
      const oldAcked = old.filter((c) => c.revision !== undefined);
      const oldRefused = old.filter((c) => c.failure);
      // Every write of the current generation is accepted.
      expect(
        cur.filter((c) => c.failure).map((c) => `${c.id}: ${c.failure!.codeName} ${c.failure!.reason} ${c.failure!.message}`),
        "refused writes of the current generation",
      ).to.deep.equal([]);
      expect(oldRefused.length, "writes of the old generation refused").to.be.greaterThan(0);

      // Every refusal is the old generation's own: FAILED_PRECONDITION, STALE_TOKEN naming generation g1 and
      // the fence g2 (under LIVE, before g2 has written, LEASE_NOT_HELD naming g1's lease).
      const allowed = mode === FenceMode.LIVE ? ["STALE_TOKEN", "LEASE_NOT_HELD"] : ["STALE_TOKEN"];
      for (const c of oldRefused) {
        const f = c.failure!;
        const what = `${c.id}: ${f.codeName} ${f.reason} ${JSON.stringify(f.metadata)} ${f.message}`;
        expect(f.code, what).to.equal(Code.FailedPrecondition);
        expect(allowed, what).to.include(f.reason);
        expect(f.metadata, what).to.include({ resource, generation: String(g1.generation) });
        expect(f.message, what).to.include(`generation ${g1.generation} `);
        if (f.reason === "STALE_TOKEN") {
          expect(f.metadata.fence, what).to.equal(String(g2.generation));
          expect(f.message, what).to.include(`older than the fence ${g2.generation},`);
        } else {
          expect(f.metadata.lease_id, what).to.equal(String(g1.leaseId));
        }
      }

      // Acknowledged: every old write has a revision below the first acknowledged current one (under LIVE,
      // no later than the release, which comes before g2's grant).
      const firstCurrent = cur.reduce((min, c) => (c.revision! < min ? c.revision! : min), cur[0].revision!);
      expect(oldAcked.length, "writes of the old generation accepted before the handover").to.be.greaterThan(0);
      for (const c of oldAcked) {
        expect(c.revision! < firstCurrent, `${c.id} acknowledged at ${c.revision}, the first g2 write at ${firstCurrent}`).to.equal(true);
        if (mode === FenceMode.LIVE) expect(c.revision! < g2.generation, `${c.id} (LIVE) at ${c.revision} after g2's grant ${g2.generation}`).to.equal(true);
      }

      // In etcd: every data write is an acknowledged call's, at its revision, and each acknowledged call wrote
      // all its keys there; every old write precedes every current one; the fence rose with each write to
      // that write's generation and never went down.
      const history = await historyOf(st.kv, L.root(resource), from);
      const byId = new Map(calls.map((c) => [c.id, c]));
      const dataPrefix = `${L.root(resource)}d/`;
      const data = history.filter((e) => e.key.startsWith(dataPrefix));
      const fence = history.filter((e) => e.key === L.fence(resource));
      for (const e of data) {
        const id = e.value.split(":")[1];
        const c = byId.get(id);
        expect(c, `a write in etcd that no call made: ${e.key}=${e.value}`).to.not.equal(undefined);
        expect(c!.failure, `${id} was refused (${c!.failure?.reason}) but its write is in etcd at ${e.modRevision}`).to.equal(undefined);
        expect(e.modRevision, `${id} in etcd at another revision than acknowledged`).to.equal(c!.revision);
        expect(e.value, `${id}`).to.equal(c!.value);
      }
      for (const c of calls.filter((c) => c.revision !== undefined)) {
        for (const k of c.keys) {
          expect(
            data.some((e) => e.key === dataPrefix + k && e.modRevision === c.revision && e.value === c.value),
            `${c.id}'s write of ${k} at ${c.revision} is not in etcd's history`,
          ).to.equal(true);
        }
      }
      const lastOld = data.filter((e) => e.value.startsWith(`${g1.generation}:`)).reduce((m, e) => (e.modRevision > m ? e.modRevision : m), 0n);
      const firstNew = data.filter((e) => e.value.startsWith(`${g2.generation}:`)).reduce((m, e) => (e.modRevision < m ? e.modRevision : m), BigInt(Number.MAX_SAFE_INTEGER));
      expect(lastOld < firstNew, `an old write at ${lastOld} after the first current one at ${firstNew}`).to.equal(true);
      if (mode === FenceMode.LIVE) {
        // Under LIVE, a write commits only while its lease holds: before the release deleted A's owner key
        // (never at the same revision, judged beside the release in one request).
        const released = history.find((e) => e.key === L.owner(resource) && e.type === "delete");
        expect(released, "the release of A's owner key in etcd's history").to.not.equal(undefined);
        for (const c of oldAcked) expect(c.revision! < released!.modRevision, `${c.id} (LIVE) at ${c.revision}, the release at ${released!.modRevision}`).to.equal(true);
      }
      for (let i = 1; i < fence.length; i++) {
        expect(BigInt(fence[i].value) >= BigInt(fence[i - 1].value), `the fence went down at ${fence[i].modRevision}`).to.equal(true);
      }
      for (const e of data) {
        const f = fence.find((x) => x.modRevision === e.modRevision);
        expect(f, `no fence write with the data write at ${e.modRevision}`).to.not.equal(undefined);
        expect(BigInt(f!.value), `fence written at ${e.modRevision}`).to.equal(BigInt(e.value.split(":")[0]));
      }
      // And what a reader sees now: each key's last write, which is the current generation's where it wrote.
      for (const k of keys) {
        const got = await st.store.get({ resource, key: k });
        const last = data.filter((e) => e.key === dataPrefix + k).at(-1);
        expect(got.found, k).to.equal(last !== undefined);
        if (last) expect({ value: text(got.value), rev: got.modRevision }, k).to.deep.equal({ value: last.value, rev: last.modRevision });
      }

      // Batches really formed, and etcd refused none of the requests.
      const d = delta(await writeCounts(st.server), before);
      expect(d.errors, `etcd refused write requests: ${JSON.stringify(d.errorsBy)}`).to.equal(0);
      expect(d.requests, `${d.requests} etcd write requests for ${calls.length} writes`).to.be.below(calls.length * 0.75);
    });
  }

  it("idempotent retries within one batch: one applies, the others replay it, another request under the key is refused", async () => {
    const resource = uniqueResource("idem-batch");
    const other = uniqueResource("idem-batch-other");
    const L = layout(st.prefix);
    const token = await acquire(resource, "A");
    const otherToken = await acquire(other, "B");
    const from = await etcdRevision(st.kv);
    const before = await writeCounts(st.server);
    const tag = `${process.pid}-${Date.now()}`;
    const same = `same-${tag}`;

    type Outcome = { name: string; revision?: bigint; fence?: bigint; replayed?: boolean; failure?: Failure };
    const run = (name: string, call: () => Promise<{ commit?: { revision: bigint; fence: bigint; replayed: boolean } }>): Promise<Outcome> =>
      call().then(
        (r) => ({ name, revision: r.commit!.revision, fence: r.commit!.fence, replayed: r.commit!.replayed }),
        (e) => ({ name, failure: failureOf(e) }),
      );
    const keyed = (res: string, tok: FencingToken, key: string, value: string, idempotencyKey: string) => () =>
      st.store.put({ resource: res, key, value: bytes(value), mutation: { token: tok, idempotencyKey } });
    const keyedTxn = (idempotencyKey: string, value: string) => () =>
      st.store.txn({
        resource: other,
        mutation: { token: otherToken, idempotencyKey },
        ops: ["t1", "t2"].map((key) => ({ op: { case: "put" as const, value: { key, value: bytes(value) } } })),
      });

    const pending: Promise<Outcome>[] = [];
    for (let i = 0; i < 20; i++) {
      pending.push(run(`same#${i}`, keyed(resource, token, "k", "v1", same)));
      // Others between the retries, so that they share requests: plain writes, other keys, another resource.
      if (i % 4 === 0) pending.push(run(`plain#${i}`, () => st.store.put({ resource, key: `plain${i}`, value: bytes(`p${i}`), mutation: { token } })));
      if (i % 4 === 1) pending.push(run(`plain-other#${i}`, () => st.store.put({ resource: other, key: `plain${i}`, value: bytes(`p${i}`), mutation: { token: otherToken } })));
      if (i % 5 === 2) pending.push(run(`diff#${i}`, keyed(resource, token, `d${i}`, `dv${i}`, `diff-${i}-${tag}`)));
      if (i % 5 === 3) pending.push(run(`diff-other#${i}`, keyed(other, otherToken, `d${i}`, `dv${i}`, `diff-other-${i}-${tag}`)));
      if (i % 2 === 0) pending.push(run(`txn#${i}`, keyedTxn(`txn-${tag}`, "tv")));
    }
    pending.push(run("same-other-value", keyed(resource, token, "k", "v2", same)));
    const outcomes = await Promise.all(pending);
    const show = (o: Outcome) => `${o.name}: ${o.failure ? `${o.failure.codeName} ${o.failure.reason} ${o.failure.message}` : `rev ${o.revision} replayed ${o.replayed}`}`;

    // Everything without a shared key applies once.
    for (const o of outcomes.filter((o) => /^(plain|diff)/.test(o.name))) {
      expect(o.failure, show(o)).to.equal(undefined);
      expect(o.replayed, show(o)).to.equal(false);
    }
    const check = (group: Outcome[], expectedValue: string | undefined) => {
      const applied = group.filter((o) => !o.failure && !o.replayed);
      expect(applied.length, `applied once among:\n${group.map(show).join("\n")}`).to.equal(1);
      return applied[0];
    };
    // The 20 retries and the request with another value under the same key: one applies; the retries of
    // the same request replay it (same revision and fence); a different request gets IDEMPOTENCY_KEY_REUSED.
    const sameGroup = outcomes.filter((o) => o.name.startsWith("same"));
    const first = check(sameGroup, undefined);
    const firstValue = first.name === "same-other-value" ? "v2" : "v1";
    for (const o of sameGroup.filter((o) => o !== first)) {
      const isSameRequest = (o.name === "same-other-value") === (first.name === "same-other-value");
      if (isSameRequest) {
        expect(o.failure, show(o)).to.equal(undefined);
        expect({ revision: o.revision, fence: o.fence, replayed: o.replayed }, show(o)).to.deep.equal({ revision: first.revision, fence: token.generation, replayed: true });
      } else {
        expect(o.failure?.code, show(o)).to.equal(Code.InvalidArgument);
        expect(o.failure?.reason, show(o)).to.equal("IDEMPOTENCY_KEY_REUSED");
        expect(o.failure?.metadata.idempotency_key, show(o)).to.equal(same);
      }
    }
    const txns = outcomes.filter((o) => o.name.startsWith("txn"));
    const firstTxn = check(txns, undefined);
    for (const o of txns.filter((o) => o !== firstTxn)) {
      expect({ revision: o.revision, replayed: o.replayed, failure: o.failure }, show(o)).to.deep.equal({ revision: firstTxn.revision, replayed: true, failure: undefined });
    }

    // etcd agrees: one write of "k", with the applied value, at the applied revision; one of each Txn key.
    const history = await historyOf(st.kv, L.root(resource), from);
    const kWrites = history.filter((e) => e.key === L.data(resource, "k"));
    expect(kWrites.map((e) => [e.value, e.modRevision]), "writes of k in etcd").to.deep.equal([[firstValue, first.revision]]);
    const otherHistory = await historyOf(st.kv, L.root(other), from);
    for (const k of ["t1", "t2"]) {
      expect(otherHistory.filter((e) => e.key === L.data(other, k)).map((e) => e.modRevision), `writes of ${k}`).to.deep.equal([firstTxn.revision]);
    }
    const got = await st.store.get({ resource, key: "k" });
    expect({ value: text(got.value), rev: got.modRevision }).to.deep.equal({ value: firstValue, rev: first.revision });

    const d = delta(await writeCounts(st.server), before);
    expect(d.errors, `etcd refused write requests: ${JSON.stringify(d.errorsBy)}`).to.equal(0);
    expect(d.requests, `${d.requests} etcd write requests for ${outcomes.length} calls`).to.be.below(outcomes.length);
  });

  it("a key touched twice: concurrent Puts of one key and overlapping Txns all succeed, and the greatest revision wins", async () => {
    const resource = uniqueResource("twice");
    const other = uniqueResource("twice-other");
    const L = layout(st.prefix);
    const token = await acquire(resource, "A");
    const otherToken = await acquire(other, "B");
    const from = await etcdRevision(st.kv);
    const before = await writeCounts(st.server);

    interface Written {
      name: string;
      resource: string;
      keys: string[];
      value: string;
      revision?: bigint;
      failure?: Failure;
    }
    const txnKeys = [["hot", "a", "b"], ["a", "b", "c"], ["c", "hot"], ["b", "d"], ["hot", "d", "a"]];
    const plan: Omit<Written, "revision" | "failure">[] = [];
    for (let i = 0; i < 40; i++) {
      plan.push({ name: `put-hot#${i}`, resource, keys: ["hot"], value: `p${i}` });
      if (i % 2 === 0) plan.push({ name: `txn#${i}`, resource, keys: txnKeys[(i / 2) % txnKeys.length], value: `t${i}` });
      if (i % 3 === 0) plan.push({ name: `put-other#${i}`, resource: other, keys: ["hot"], value: `o${i}` });
      if (i % 4 === 0) plan.push({ name: `put-distinct#${i}`, resource, keys: [`x${i}`], value: `x${i}` });
    }
    const results: Written[] = await Promise.all(
      plan.map(async (w, i): Promise<Written> => {
        const tok = w.resource === resource ? token : otherToken;
        // Some writes of the same token in LIVE mode: another group on the same keys.
        const mutation = { token: tok, mode: i % 5 === 4 ? FenceMode.LIVE : FenceMode.ORDER };
        try {
          const res =
            w.keys.length === 1
              ? await st.store.put({ resource: w.resource, key: w.keys[0], value: bytes(w.value), mutation })
              : await st.store.txn({ resource: w.resource, mutation, ops: w.keys.map((key) => ({ op: { case: "put" as const, value: { key, value: bytes(w.value) } } })) });
          return { ...w, revision: res.commit!.revision };
        } catch (e) {
          return { ...w, failure: failureOf(e) };
        }
      }),
    );
    expect(
      results.filter((r) => r.failure).map((r) => `${r.name}: ${r.failure!.codeName} ${r.failure!.reason} ${r.failure!.message}`),
      "calls that failed",
    ).to.deep.equal([]);

    for (const [res, keysOf] of [
      [resource, ["hot", "a", "b", "c", "d"]],
      [other, ["hot"]],
    ] as const) {
      const history = await historyOf(st.kv, L.root(res), from);
      for (const k of keysOf) {
        const writers = results.filter((r) => r.resource === res && r.keys.includes(k)).sort((x, y) => (x.revision! < y.revision! ? -1 : 1));
        // Two writes of one key never share a revision: they never share an etcd request.
        const revisions = writers.map((w) => w.revision!);
        expect(new Set(revisions).size, `${res}/${k}: revisions ${revisions.join(",")}`).to.equal(revisions.length);
        const last = writers.at(-1)!;
        const got = await st.store.get({ resource: res, key: k });
        expect({ value: text(got.value), rev: got.modRevision }, `${res}/${k}: the value of the greatest acknowledged revision`).to.deep.equal({ value: last.value, rev: last.revision });
        // etcd's history of the key is exactly the acknowledged writes, in revision order.
        const events = history.filter((e) => e.key === L.data(res, k)).map((e) => `${e.modRevision}=${e.value}`);
        expect(events, `${res}/${k}: etcd's history`).to.deep.equal(writers.map((w) => `${w.revision}=${w.value}`));
      }
    }

    const d = delta(await writeCounts(st.server), before);
    expect(d.errors, `etcd refused write requests (a key twice?): ${JSON.stringify(d.errorsBy)}`).to.equal(0);
    // Writes of "hot" each need a request of their own (52 of them); the others may share them. How many
    // do depends on how the calls arrive (fewer on a loaded machine): some must have.
    expect(d.requests, `${d.requests} etcd write requests for ${results.length} calls`).to.be.below(results.length);
  });

  for (const keyedCount of [1, 3]) {
    it(`a batch that etcd refuses for ${keyedCount === 1 ? "one member" : "three members"} (a revoked record lease): every other member commits, and so do those, on a new lease`, async () => {
      // Plain writes go to the first three resources, keyed Puts each to one of its own (a keyed Put has a
      // guard of its own, which writes the fence: it shares no request with other writes of its resource).
      const resources = ["a", "b", "c", "k0", "k1", "k2"].map((n) => uniqueResource(`revoked-${n}`));
      const L = layout(st.prefix);
      const tokens = await Promise.all(resources.map((r, i) => acquire(r, `H${i}`)));
      const tag = `${process.pid}-${Date.now()}`;

      // A record on the current record lease; then the lease is revoked behind the server's back.
      await st.store.put({ resource: resources[0], key: "seed", value: bytes("s"), mutation: { token: tokens[0], idempotencyKey: `seed-${tag}` } });
      const records = await st.kv.getAll().prefix(L.records()).exec();
      const revoked = new Set(records.kvs.map((kv) => String(kv.lease)).filter((l) => l !== "0"));
      expect(revoked.size, "record leases").to.be.greaterThan(0);
      for (const id of revoked) await st.kv.leaseClient.leaseRevoke({ ID: id });

      const before = await writeCounts(st.server);
      type Call = { name: string; keyed: boolean; resource: number; keys: string[]; value: string };
      const calls: Call[] = [];
      for (let i = 0; i < 40; i++) {
        const r = i % 3;
        // Plain writes: mostly Txns (so that a request with a keyed Put in it is labelled "batch"), some Puts.
        calls.push({ name: `plain-${i}`, keyed: false, resource: r, keys: i % 4 === 3 ? [`p${i}`] : [`p${i}`, `q${i}`], value: `v${i}` });
        if (i >= 12 && i < 12 + keyedCount) calls.push({ name: `keyed-${i}-${tag}`, keyed: true, resource: 3 + i - 12, keys: [`keyed${i}`], value: `kv${i}` });
      }
      const send = (c: Call) => {
        const mutation = { token: tokens[c.resource], idempotencyKey: c.keyed ? c.name : "" };
        const resource = resources[c.resource];
        const call =
          c.keys.length === 1
            ? st.store.put({ resource, key: c.keys[0], value: bytes(c.value), mutation })
            : st.store.txn({ resource, mutation, ops: c.keys.map((key) => ({ op: { case: "put" as const, value: { key, value: bytes(c.value) } } })) });
        return call.then(
          (r) => ({ call: c, ok: true as const, commit: r.commit! }),
          (e) => ({ call: c, ok: false as const, failure: failureOf(e) }),
        );
      };
      // etcd is frozen while the calls arrive, so that they queue up and go out together once it thaws:
      // the keyed Puts come after the first requests, in one batch with plain writes.
      st.etcd.pause();
      let outcomes;
      try {
        const early = calls.slice(0, 10).map(send);
        await sleep(200);
        const rest = calls.slice(10).map(send);
        await sleep(500);
        st.etcd.resume();
        outcomes = await Promise.all([...early, ...rest]);
      } finally {
        st.etcd.resume();
      }
      expect(
        outcomes.filter((o) => !o.ok).map((o) => `${o.call.name}: ${!o.ok && `${o.failure.codeName} ${o.failure.reason} ${o.failure.message}`}`),
        "calls that failed",
      ).to.deep.equal([]);

      for (const o of outcomes) {
        if (!o.ok) continue;
        expect(o.commit.replayed, o.call.name).to.equal(false);
        // Everything is in etcd, at the revision its call was told.
        for (const k of o.call.keys) {
          const got = await st.store.get({ resource: resources[o.call.resource], key: k });
          expect({ value: text(got.value), rev: got.modRevision }, `${o.call.name}: ${k}`).to.deep.equal({ value: o.call.value, rev: o.commit.revision });
        }
        if (!o.call.keyed) continue;
        // A keyed Put's record is on a lease that exists, and a retry is answered from it.
        const after = await st.kv.getAll().prefix(L.records()).exec();
        const record = after.kvs.find((kv) => kv.mod_revision === String(o.commit.revision));
        expect(record, `${o.call.name}: its idempotency record`).to.not.equal(undefined);
        expect(revoked.has(String(record!.lease)), `${o.call.name}: its record is on the revoked lease`).to.equal(false);
        const left = await st.kv.leaseClient.leaseTimeToLive({ ID: String(record!.lease) });
        expect(Number(left.TTL), `${o.call.name}: TTL of its record's lease`).to.be.greaterThan(0);
        const retry = await send(o.call);
        expect(retry.ok && retry.commit, `${o.call.name}: retry`).to.deep.include({ replayed: true, revision: o.commit.revision });
      }

      // etcd did refuse a request, and the server mended it. (Its label is "batch" when its members were of
      // different kinds, the kind itself, e.g. "put", when they were all alike: which, depends on how the
      // calls fell into requests after the thaw.)
      const d = delta(await writeCounts(st.server), before);
      const refused = Object.values(d.errorsBy).reduce((n, v) => n + v, 0);
      expect(refused, `refused requests: ${JSON.stringify(d.errorsBy)}`).to.be.greaterThan(0);
    });
  }

  it("acquire under load: 50 resources cycling at once and 20 waiters on one resource, granted in order with rising generations", async () => {
    const before = await writeCounts(st.server);
    let writeCalls = 0;
    // The waiters: each joins after the previous is counted in line, so that their order is known.
    const line = uniqueResource("line");
    const first = await acquire(line, "first", 30);
    writeCalls++;
    const grants: { waiter: number; generation: bigint; put: bigint }[] = [];
    const waiting: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      waiting.push(
        (async () => {
          const { token } = await st.lease.acquire({ resource: line, ttl: ttl(30), holder: `w${i}`, wait: true });
          const put = await st.store.put({ resource: line, key: "holder", value: bytes(`w${i}`), mutation: { token: token!, mode: FenceMode.LIVE } });
          grants.push({ waiter: i, generation: token!.generation, put: put.commit!.fence });
          await st.lease.release({ token: token! });
        })(),
      );
      // Its etcd writes: joining the line, the grant, the Put, the release.
      writeCalls += 4;
      await eventually(async () => (await st.lease.describe({ resource: line })).waiters === i + 1, `waiter ${i} in line`, 10_000);
    }

    // 50 resources, 3 acquire + put + release cycles each, all at once, while the line moves.
    const distinct = Array.from({ length: 50 }, (_, i) => uniqueResource(`cycle${i}`));
    const generations = new Map<string, bigint[]>(distinct.map((r) => [r, []]));
    const cycles = Promise.all(
      distinct.map(async (resource) => {
        for (let c = 0; c < 3; c++) {
          const token = (await st.lease.acquire({ resource, ttl: ttl(10), holder: `c${c}` })).token!;
          generations.get(resource)!.push(token.generation);
          const put = await st.store.put({ resource, key: "k", value: bytes(`c${c}`), mutation: { token } });
          expect(put.commit!.fence).to.equal(token.generation);
          await st.lease.release({ token });
        }
      }),
    );
    writeCalls += 50 * 3 * 3;
    await sleep(20);
    await st.lease.release({ token: first });
    writeCalls++;
    await Promise.all([cycles, ...waiting]);

    for (const [resource, gens] of generations) {
      for (let i = 1; i < gens.length; i++) expect(gens[i] > gens[i - 1], `${resource}: generations ${gens.join(",")}`).to.equal(true);
      const fence = await st.store.getFence({ resource });
      expect({ fence: fence.fence, lastIssued: fence.lastIssued }, resource).to.deep.equal({ fence: gens.at(-1), lastIssued: gens.at(-1) });
      const d = await st.lease.describe({ resource });
      expect({ held: d.held, waiters: d.waiters }, resource).to.deep.equal({ held: false, waiters: 0 });
    }
    // FIFO: granted in the order they joined, each generation above the one before.
    expect(grants.map((g) => g.waiter), "the order the waiters were granted in").to.deep.equal(Array.from({ length: 20 }, (_, i) => i));
    let previous = first.generation;
    for (const g of grants) {
      expect(g.generation > previous, `waiter ${g.waiter}: generation ${g.generation} after ${previous}`).to.equal(true);
      expect(g.put).to.equal(g.generation);
      previous = g.generation;
    }
    const described = await st.lease.describe({ resource: line });
    expect({ held: described.held, waiters: described.waiters }).to.deep.equal({ held: false, waiters: 0 });
    expect(text((await st.store.get({ resource: line, key: "holder" })).value)).to.equal("w19");

    const d = delta(await writeCounts(st.server), before);
    expect(d.errors, `etcd refused write requests: ${JSON.stringify(d.errorsBy)}`).to.equal(0);
    expect(d.requests, `${d.requests} etcd write requests for ${writeCalls} calls`).to.be.below(writeCalls);
  });
});
