// The group committer against a real etcd: what it sends (recorded on the way) stays within the limits it
// is given and never writes a key twice, transactions of one key keep their order, and every
// transaction, packed with others or not, gets the answer it would have got alone.
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { Etcd3, type IRequestOp, type IResponseOp, type ITxnRequest, type ITxnResponse } from "etcd3";
import { EtcdCalls } from "../../server/etcd/calls.js";
import { Committer, type CommitterLimits, type Outcome } from "../../server/etcd/committer.js";
import { cmp, op } from "../../server/etcd/ops.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";

/** Operations as etcd counts them against --max-txn-ops: this level's largest list, plus the largest nested. */
function etcdOps(txn: ITxnRequest): number {
  const own = Math.max(txn.compare?.length ?? 0, txn.success?.length ?? 0, txn.failure?.length ?? 0);
  let nested = 0;
  for (const o of [...(txn.success ?? []), ...(txn.failure ?? [])]) if (o.request_txn) nested = Math.max(nested, etcdOps(o.request_txn));
  return own + nested;
}

/** Bytes of keys and values in a request: a lower bound of its size on the wire. */
function payloadBytes(txn: ITxnRequest): number {
  let n = 0;
  for (const c of txn.compare ?? []) n += (c.key?.length ?? 0) + (c.range_end?.length ?? 0) + (c.value?.length ?? 0);
  for (const o of [...(txn.success ?? []), ...(txn.failure ?? [])]) {
    if (o.request_put) n += o.request_put.key!.length + (o.request_put.value?.length ?? 0);
    else if (o.request_delete_range) n += o.request_delete_range.key!.length + (o.request_delete_range.range_end?.length ?? 0);
    else if (o.request_range) n += (o.request_range.key?.length ?? 0) + (o.request_range.range_end?.length ?? 0);
    else if (o.request_txn) n += payloadBytes(o.request_txn);
  }
  return n;
}

/** Keys written more than once in a request, over all its nested transactions and both branches. */
function keysWrittenTwice(txn: ITxnRequest): string[] {
  const seen = new Set<string>();
  const twice: string[] = [];
  const visit = (ops: IRequestOp[] | undefined) => {
    for (const o of ops ?? []) {
      const key = o.request_put?.key ?? o.request_delete_range?.key;
      if (key) {
        const k = key.toString();
        if (seen.has(k)) twice.push(k);
        seen.add(k);
      }
      if (o.request_txn) {
        visit(o.request_txn.success);
        visit(o.request_txn.failure);
      }
    }
  };
  visit(txn.success);
  visit(txn.failure);
  return twice;
}

/** How many transactions a request carries: nested ones, or itself. */
const carried = (req: ITxnRequest) => {
  const nested = (req.success ?? []).filter((o) => o.request_txn).length;
  return req.compare?.length === 0 && nested === req.success?.length && nested > 0 ? nested : 1;
};

describe("the group committer", function () {
  this.timeout(60_000);
  let etcd: TestEtcd;
  let client: Etcd3;
  let prefix: string;
  let sent: ITxnRequest[];
  let refused: unknown[];

  before(async function () {
    etcd = await startEtcd();
    client = new Etcd3({ hosts: etcd.endpoint });
  });
  after(async function () {
    client?.close();
    await etcd?.destroy();
  });
  beforeEach(() => {
    prefix = `/committer-${randomBytes(4).toString("hex")}/`;
    sent = [];
    refused = [];
  });

  /** A committer on the real etcd, whose requests are recorded on their way. */
  function committer(limits: CommitterLimits): Committer {
    const recording = {
      kv: {
        txn: (req: ITxnRequest): Promise<ITxnResponse> => {
          sent.push(req);
          return client.kv.txn(req);
        },
      },
    };
    const calls = new EtcdCalls((_what, _seconds, error) => {
      if (error !== undefined) refused.push(error);
    });
    return new Committer(recording as unknown as Etcd3, calls, limits);
  }

  const key = (name: string) => Buffer.from(`${prefix}${name}`);
  const get = async (name: string) => (await client.kv.range({ key: key(name) })).kvs[0];
  const checkRequests = (limits: CommitterLimits) => {
    for (const [i, req] of sent.entries()) {
      expect(etcdOps(req), `request ${i}: operations`).to.be.at.most(limits.maxTxnOps);
      expect(payloadBytes(req), `request ${i}: bytes`).to.be.at.most(limits.maxRequestBytes);
      expect(keysWrittenTwice(req), `request ${i}: keys written twice`).to.deep.equal([]);
    }
  };

  it("never sends a request over the operation or byte limit, and every transaction commits", async () => {
    const limits = { maxTxnOps: 16, maxRequestBytes: 64 * 1024, maxInFlight: 1 };
    const c = committer(limits);
    const jobs: { names: string[]; values: Buffer[]; done: Promise<Outcome> }[] = [];
    for (let i = 0; i < 160; i++) {
      // Plain transactions of 1 to 14 puts (with a compare that holds, and a failure read), values of 0 to
      // 12 KiB; every fifth one up to 48 KiB, so that bytes bound a request as well as operations.
      const n = 1 + ((i * 7) % 14);
      const names = Array.from({ length: n }, (_, j) => `plain${i}/${j}`);
      const size = i % 5 === 0 ? 16 * 1024 + ((i * 977) % (32 * 1024)) : (i * 1_531) % (12 * 1024);
      const values = names.map((_, j) => Buffer.alloc(Math.floor(size / n) + j, 0x61 + (i % 26)));
      const txn = {
        compare: [cmp.createdAt(key(names[0]), 0n)],
        success: names.map((name, j) => op.put(key(name), values[j])),
        failure: [op.get(key(names[0]))],
      };
      jobs.push({ names, values, done: c.commit(`plain ${i}`, txn) });
      if (i % 2 === 0) {
        // Guarded ones: four groups, each member 1 to 3 puts of its own (the group's own count grows).
        const g = i % 8;
        const m = 1 + (i % 3);
        const own = Array.from({ length: m }, (_, j) => `guarded${i}/${j}`);
        const ownValues = own.map((_, j) => Buffer.alloc(((i * 313) % 6000) + j, 0x41 + j));
        const guard = { key: `group${g}`, compare: [cmp.createdAt(key(`never${g}`), 0n)], shared: [op.put(key(`fence${g}`), Buffer.from(String(i)))], failure: [op.get(key(`never${g}`))] };
        jobs.push({ names: own, values: ownValues, done: c.commitGuarded(`guarded ${i}`, guard, own.map((name, j) => op.put(key(name), ownValues[j]))) });
      }
    }
    const outcomes = await Promise.all(jobs.map((j) => j.done));
    checkRequests(limits);
    expect(refused.map(String), "requests etcd refused").to.deep.equal([]);
    expect(outcomes.every((o) => o.succeeded), "every transaction succeeded").to.equal(true);
    // Batches formed: fewer requests than transactions, some with many.
    expect(sent.length, `${sent.length} requests for ${jobs.length} transactions`).to.be.below(jobs.length / 2);
    expect(Math.max(...sent.map(carried))).to.be.greaterThan(4);
    // Each transaction's writes are in etcd, at the revision it was told.
    for (const [i, j] of jobs.entries()) {
      for (const [k, name] of j.names.entries()) {
        const kv = await get(name);
        expect(kv?.value.equals(j.values[k]), `job ${i}: ${name}`).to.equal(true);
        expect(kv.mod_revision, `job ${i}: ${name}'s revision`).to.equal(String(outcomes[i].revision));
      }
    }
  });

  it("never puts two transactions that write one key in one request, and commits them in their order", async () => {
    const limits = { maxTxnOps: 128, maxRequestBytes: 1024 * 1024, maxInFlight: 1 };
    const c = committer(limits);
    const hot: { value: string; done: Promise<Outcome> }[] = [];
    const others: Promise<Outcome>[] = [];
    for (let i = 0; i < 30; i++) {
      const value = `v${i}`;
      const guard = { key: "group", compare: [], shared: [op.put(key("fence"), Buffer.from(value))], failure: [] };
      if (i % 3 === 0) {
        // Plain: a put of hot, and of keys that others write too.
        hot.push({ value, done: c.commit(`hot ${i}`, { compare: [], success: [op.put(key("hot"), Buffer.from(value)), op.put(key(`warm${i % 2}`), Buffer.from(value))], failure: [] }) });
      } else if (i % 3 === 1) {
        // Members of one guarded group that write hot: the group's inner transaction may not take two.
        hot.push({ value, done: c.commitGuarded(`hot ${i}`, guard, [op.put(key("hot"), Buffer.from(value))]) });
      } else {
        // A put of hot nested in the failure branch of a transaction whose compare fails.
        hot.push({
          value,
          done: c.commit(`hot ${i}`, { compare: [cmp.createdAt(key("hot"), 1n)], success: [], failure: [op.txn({ compare: [], success: [op.put(key("hot"), Buffer.from(value))], failure: [] })] }),
        });
      }
      // Others in between, on keys of their own, so that requests have room for more.
      others.push(c.commitGuarded(`other ${i}`, guard, [op.put(key(`own${i}`), Buffer.from(value))]));
      others.push(c.commit(`cold ${i}`, { compare: [], success: [op.put(key(`cold${i}`), Buffer.from(value))], failure: [] }));
    }
    // Members of one group in a row, all writing one key of their own: each goes in a request of its own.
    const twins = Array.from({ length: 10 }, (_, i) => {
      const guard = { key: "twins", compare: [], shared: [op.put(key("twins-fence"), Buffer.from("f"))], failure: [] };
      return c.commitGuarded(`twin ${i}`, guard, [op.put(key("twin"), Buffer.from(`t${i}`)), op.put(key(`twin${i}`), Buffer.from(`t${i}`))]);
    });
    const outcomes = await Promise.all(hot.map((h) => h.done));
    const twinOutcomes = await Promise.all(twins);
    await Promise.all(others);
    checkRequests(limits);
    expect(refused.map(String), "requests etcd refused").to.deep.equal([]);
    expect(sent.length, `${sent.length} requests for ${hot.length + others.length} transactions`).to.be.below((hot.length + others.length) / 2);
    // One request each, in the order they were asked for, the last one's value standing.
    const revisions = outcomes.map((o) => o.revision);
    for (let i = 1; i < revisions.length; i++) expect(revisions[i] > revisions[i - 1], `hot ${i} at ${revisions[i]}, hot ${i - 1} at ${revisions[i - 1]}`).to.equal(true);
    const kv = await get("hot");
    expect({ value: kv.value.toString(), rev: kv.mod_revision }).to.deep.equal({ value: hot.at(-1)!.value, rev: String(revisions.at(-1)) });
    for (let i = 1; i < twinOutcomes.length; i++) expect(twinOutcomes[i].revision > twinOutcomes[i - 1].revision, `twin ${i} after twin ${i - 1}`).to.equal(true);
    const twin = await get("twin");
    expect({ value: twin.value.toString(), rev: twin.mod_revision }).to.deep.equal({ value: "t9", rev: String(twinOutcomes[9].revision) });
  });

  it("answers each transaction as it would have been answered alone: its own branch, its own responses", async () => {
    const limits = { maxTxnOps: 128, maxRequestBytes: 1024 * 1024, maxInFlight: 1 };
    const c = committer(limits);
    // Gates: a compare on each holds or fails.
    await client.kv.txn({
      compare: [],
      success: [
        ...Array.from({ length: 20 }, (_, i) => op.put(key(`gate${i}`), Buffer.from(i % 2 === 0 ? "open" : "shut"))),
        op.put(key("group-open"), Buffer.from("open")),
        op.put(key("group-shut"), Buffer.from("shut")),
      ],
      failure: [],
    });
    const plain = Array.from({ length: 20 }, (_, i) =>
      c.commit(`plain ${i}`, {
        compare: [cmp.valueIs(key(`gate${i}`), Buffer.from("open"))],
        success: [op.put(key(`out${i}`), Buffer.from(`s${i}`)), op.get(key(`gate${i}`)), op.get(key(`out${i}`))],
        failure: [op.get(key(`gate${i}`)), op.put(key(`failed${i}`), Buffer.from(`f${i}`))],
      }),
    );
    const group = (name: string) => ({
      key: name,
      compare: [cmp.valueIs(key(name), Buffer.from("open"))],
      shared: [op.put(key(`${name}-mark`), Buffer.from("m"))],
      failure: [op.get(key(name))],
    });
    const members = Array.from({ length: 20 }, (_, i) => {
      const g = i % 2 === 0 ? "group-open" : "group-shut";
      // Own writes of different lengths, each read back after it is written.
      const own = Array.from({ length: 1 + (i % 3) }, (_, j) => `member${i}/${j}`);
      return { g, own, done: c.commitGuarded(`member ${i}`, group(g), own.flatMap((name) => [op.put(key(name), Buffer.from(name)), op.get(key(name))])) };
    });
    const plainOutcomes = await Promise.all(plain);
    const memberOutcomes = await Promise.all(members.map((m) => m.done));
    checkRequests(limits);
    expect(refused.map(String), "requests etcd refused").to.deep.equal([]);
    expect(Math.max(...sent.map(carried)), "transactions in the largest request").to.be.greaterThan(4);

    for (const [i, o] of plainOutcomes.entries()) {
      const open = i % 2 === 0;
      expect(o.succeeded, `plain ${i}`).to.equal(open);
      if (open) {
        expect(o.responses.map(kindOf), `plain ${i}`).to.deep.equal(["response_put", "response_range", "response_range"]);
        expect(o.responses[1].response_range.kvs[0].value.toString(), `plain ${i}: its gate`).to.equal("open");
        expect(o.responses[2].response_range.kvs[0].value.toString(), `plain ${i}: its write, read back`).to.equal(`s${i}`);
        expect((await get(`out${i}`)).mod_revision, `plain ${i}`).to.equal(String(o.revision));
        expect(await get(`failed${i}`), `plain ${i}`).to.equal(undefined);
      } else {
        expect(o.responses.map(kindOf), `plain ${i}`).to.deep.equal(["response_range", "response_put"]);
        expect(o.responses[0].response_range.kvs[0].value.toString(), `plain ${i}: its gate`).to.equal("shut");
        expect(await get(`out${i}`), `plain ${i}`).to.equal(undefined);
        expect((await get(`failed${i}`)).value.toString(), `plain ${i}`).to.equal(`f${i}`);
      }
    }
    for (const [i, o] of memberOutcomes.entries()) {
      const { g, own } = members[i];
      const open = g === "group-open";
      expect(o.succeeded, `member ${i}`).to.equal(open);
      if (open) {
        // Its own responses only: a put and a read of each of its own keys, in order.
        expect(o.responses.map(kindOf), `member ${i}`).to.deep.equal(own.flatMap(() => ["response_put", "response_range"]));
        own.forEach((name, j) => expect(o.responses[2 * j + 1].response_range.kvs[0]?.value.toString(), `member ${i}: ${name} read back`).to.equal(name));
        for (const name of own) expect((await get(name)).mod_revision, `member ${i}: ${name}`).to.equal(String(o.revision));
      } else {
        // The guard's failure reads.
        expect(o.responses.map(kindOf), `member ${i}`).to.deep.equal(["response_range"]);
        expect(o.responses[0].response_range.kvs[0].value.toString(), `member ${i}`).to.equal("shut");
        for (const name of own) expect(await get(name), `member ${i}: ${name}`).to.equal(undefined);
      }
    }
    expect(await get("group-shut-mark")).to.equal(undefined);
    expect((await get("group-open-mark"))?.value.toString()).to.equal("m");
  });

  it("judges a transaction that compares a key another one writes after that write, as alone, never in the same request", async () => {
    const limits = { maxTxnOps: 128, maxRequestBytes: 1024 * 1024, maxInFlight: 1 };
    const c = committer(limits);
    await client.kv.txn({ compare: [], success: [op.put(key("x"), Buffer.from("old")), op.put(key("gate"), Buffer.from("g"))], failure: [] });
    // A first transaction takes the one request in flight; the rest queue and go out together after it.
    const first = c.commit("first", { compare: [], success: [op.put(key("first"), Buffer.from("1"))], failure: [] });
    const jobs: { name: string; expected: boolean; done: Promise<Outcome> }[] = [];
    for (let i = 0; i < 10; i++) {
      const value = `new${i}`;
      // Writes x; then one that holds only if it sees that write, and one that holds only if it does not.
      jobs.push({ name: `write ${i}`, expected: true, done: c.commit(`write ${i}`, { compare: [], success: [op.put(key("x"), Buffer.from(value))], failure: [] }) });
      jobs.push({
        name: `sees ${i}`,
        expected: true,
        done: c.commit(`sees ${i}`, { compare: [cmp.valueIs(key("x"), Buffer.from(value))], success: [op.put(key(`seen${i}`), Buffer.from("y"))], failure: [op.get(key("x"))] }),
      });
      // A guarded group whose compare reads x: its members come after the write, in the same queue.
      const guard = { key: "reads-x", compare: [cmp.valueIs(key("x"), Buffer.from(value))], shared: [op.put(key("mark"), Buffer.from(value))], failure: [op.get(key("x"))] };
      jobs.push({ name: `member ${i}`, expected: true, done: c.commitGuarded(`member ${i}`, guard, [op.put(key(`member${i}`), Buffer.from("m"))]) });
      // Independent of x: may share any request.
      jobs.push({ name: `other ${i}`, expected: true, done: c.commit(`other ${i}`, { compare: [cmp.valueIs(key("gate"), Buffer.from("g"))], success: [op.put(key(`other${i}`), Buffer.from("o"))], failure: [] }) });
      jobs.push({ name: `stale ${i}`, expected: false, done: c.commit(`stale ${i}`, { compare: [cmp.valueIs(key("x"), Buffer.from("old"))], success: [op.put(key(`stale${i}`), Buffer.from("s"))], failure: [] }) });
    }
    await first;
    const outcomes = await Promise.all(jobs.map((j) => j.done));
    checkRequests(limits);
    expect(refused.map(String), "requests etcd refused").to.deep.equal([]);
    expect(
      jobs.flatMap((j, i) => (outcomes[i].succeeded === j.expected ? [] : [`${j.name}: succeeded ${outcomes[i].succeeded}, alone it would be ${j.expected}`])),
      "answers that differ from the answer alone",
    ).to.deep.equal([]);
    expect(Math.max(...sent.map(carried)), "transactions in the largest request").to.be.greaterThan(2);
  });

  it("a request that etcd refuses for one transaction (a lease that is gone) fails that one only", async () => {
    const limits = { maxTxnOps: 128, maxRequestBytes: 1024 * 1024, maxInFlight: 1 };
    const c = committer(limits);
    const lease = await client.leaseClient.leaseGrant({ TTL: 60 });
    await client.leaseClient.leaseRevoke({ ID: lease.ID });
    const guard = { key: "group", compare: [], shared: [op.put(key("fence"), Buffer.from("f"))], failure: [] };
    const jobs = Array.from({ length: 30 }, (_, i) => {
      if (i === 10) return c.commit("bad", { compare: [], success: [op.put(key("bad"), Buffer.from("x"), BigInt(lease.ID))], failure: [] });
      if (i % 2 === 0) return c.commitGuarded(`member ${i}`, guard, [op.put(key(`m${i}`), Buffer.from(`m${i}`))]);
      return c.commit(`plain ${i}`, { compare: [], success: [op.put(key(`p${i}`), Buffer.from(`p${i}`))], failure: [] });
    });
    const settled = await Promise.allSettled(jobs);
    const rejected = settled.flatMap((s, i) => (s.status === "rejected" ? [`${i}: ${(s.reason as Error).name} ${(s.reason as Error).message}`] : []));
    expect(rejected).to.have.length(1);
    expect(rejected[0]).to.match(/^10: .*lease is gone/);
    for (let i = 0; i < 30; i++) {
      if (i === 10) continue;
      const name = i % 2 === 0 ? `m${i}` : `p${i}`;
      expect((await get(name))?.value.toString(), name).to.equal(name);
    }
    expect(await get("bad")).to.equal(undefined);
    // The transaction at fault was in a request of several: etcd refused that one, and the rest went again.
    const refusedRequest = sent.find((req) => keysOf(req).includes(`${prefix}bad`) && carried(req) > 1);
    expect(refusedRequest, "a request of several transactions with the one at fault").to.not.equal(undefined);
  });

  it("writes of one resource under one guard share one rewrite of its usage key, with the sum of their changes; those past the limit are refused, and none passes it", async () => {
    const limits = { maxTxnOps: 128, maxRequestBytes: 1_400_000, maxInFlight: 1 };
    const c = committer(limits);
    const guard = { key: "g", compare: [], shared: [op.put(key("fence"), Buffer.from("1"))], failure: [] };
    const usageOf = (i: number) => ({
      key: key("usage"),
      // As every writer read it before any commit: the committer knows better after its first.
      read: { mod: 0n, bytes: 0n, seen: 0n },
      limit: 1000n,
      entries: [{ key: key(`e${i}`), read: { mod: 0n, bytes: 0n, seen: 0n }, after: 100n }],
    });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => c.commitGuarded(`w${i}`, guard, [op.put(key(`e${i}`), Buffer.alloc(90, 0x61))], usageOf(i))),
    );
    const committed = outcomes.filter((o) => o.succeeded);
    const refusals = outcomes.filter((o) => o.quota);
    expect(committed.length, "committed").to.equal(10);
    expect(refusals.length, "refused for the quota").to.equal(10);
    for (const r of refusals) expect(r.quota).to.deep.equal({ of: "resource", usage: 1000n, limit: 1000n, delta: 100n });
    expect((await get("usage")).value.toString()).to.equal("1000");
    for (let i = 0; i < 20; i++) expect((await get(`e${i}`)) !== undefined, `e${i} written`).to.equal(outcomes[i].succeeded);
    // The first went alone; the nine that fit after it went together, with one rewrite of the usage.
    const writes = sent.filter((req) => (req.success ?? []).some((o) => o.request_put));
    expect(writes.length, "requests that wrote").to.equal(2);
    expect(writes[1].success!.filter((o) => o.request_put?.key?.equals(key("usage")))).to.have.length(1);
    checkRequests(limits);
    expect(refused).to.deep.equal([]);
  });

  describe("a payer's ledger (--max-store-bytes-per-caller), charged by the writes of many resources", () => {
    const none = { mod: 0n, bytes: 0n, seen: 0n };
    /** A write of 100 bytes into resource r, charged to the ledger, under a guard that holds or fails. */
    const write = (c: Committer, r: number, ledgerLimit: bigint, holds = true) =>
      c.commitGuarded(
        `r${r}`,
        { key: `g${r}`, compare: holds ? [] : [cmp.createdAt(key(`fence${r}`), 1n)], shared: [op.put(key(`fence${r}`), Buffer.from("1"))], failure: [op.get(key(`fence${r}`))] },
        [op.put(key(`r${r}/e`), Buffer.alloc(90, 0x61))],
        {
          key: key(`r${r}/usage`),
          read: none,
          limit: 1_000_000n,
          entries: [{ key: key(`r${r}/e`), read: none, after: 100n }],
          payer: "0123456789abcdef",
          ledger: { key: key("ledger"), read: none, limit: ledgerLimit },
        },
      );
    const ledgerRewrites = (req: ITxnRequest) => keysOf(req).filter((k) => k === `${prefix}ledger`).length;

    it("writes of 30 resources go in a few requests, each rewriting the ledger once with the sum of their changes; those past it are refused, and none passes it", async () => {
      const limits = { maxTxnOps: 128, maxRequestBytes: 1_400_000, maxInFlight: 4 };
      const c = committer(limits);
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, r) => write(c, r, 2000n)));
      expect(outcomes.filter((o) => o.succeeded).length, "committed").to.equal(20);
      const refusals = outcomes.filter((o) => o.quota);
      expect(refusals.length, "refused for the ledger").to.equal(10);
      for (const r of refusals) expect(r.quota).to.deep.equal({ of: "caller", usage: 2000n, limit: 2000n, delta: 100n });
      expect((await get("ledger")).value.toString()).to.equal("2000");
      for (let r = 0; r < 30; r++) expect((await get(`r${r}/usage`))?.value.toString(), `r${r}'s usage key`).to.equal(outcomes[r].succeeded ? "100 0123456789abcdef" : undefined);
      const writes = sent.filter((req) => keysOf(req).includes(`${prefix}ledger`));
      expect(writes.length, "requests that charged the ledger").to.be.at.most(3);
      for (const req of writes) expect(ledgerRewrites(req), "rewrites of the ledger in one request").to.equal(1);
      expect(Math.max(...writes.map(carried)), "transactions in the largest request").to.be.greaterThan(5);
      checkRequests(limits);
      expect(refused).to.deep.equal([]);
    });

    it("a unit with a write whose guard fails: that one alone fails, the others commit, and the ledger counts exactly theirs", async () => {
      const limits = { maxTxnOps: 128, maxRequestBytes: 1_400_000, maxInFlight: 1 };
      const c = committer(limits);
      // The first goes alone; the rest wait for it, and go together.
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, r) => write(c, r, 1_000_000n, r !== 5)));
      expect(outcomes.map((o) => o.succeeded)).to.deep.equal(Array.from({ length: 12 }, (_, r) => r !== 5));
      expect(outcomes[5].responses.length, "the failure branch's reads, to say why").to.be.greaterThan(0);
      expect((await get("ledger")).value.toString()).to.equal(String(11 * 100));
      expect(await get("r5/e")).to.equal(undefined);
      // The first alone; the eleven together, failed by the one; the ten again together (their own
      // compares held, which their failure branch said), not one by one.
      expect(sent.map(carried)).to.deep.equal([1, 11, 10]);
      checkRequests(limits);
    });

    it("a write built for another payer than the resource's is answered `again`, unsent", async () => {
      const c = committer({ maxTxnOps: 128, maxRequestBytes: 1_400_000, maxInFlight: 1 });
      expect((await write(c, 1, 1_000_000n)).succeeded).to.equal(true);
      const other = await c.commitGuarded(
        "other payer",
        { key: "g1", compare: [], shared: [op.put(key("fence1"), Buffer.from("1"))], failure: [] },
        [op.put(key("r1/f"), Buffer.from("x"))],
        { key: key("r1/usage"), read: none, limit: 1_000_000n, entries: [{ key: key("r1/f"), read: none, after: 10n }], payer: "fedcba9876543210", ledger: { key: key("ledger2"), read: none, limit: 1000n } },
      );
      expect(other).to.include({ succeeded: false, again: true });
      expect(await get("r1/f")).to.equal(undefined);
      expect(await get("ledger2")).to.equal(undefined);
    });
  });
});

/** Which response a branch's operation got. */
function kindOf(r: IResponseOp): string {
  if (r.response_put) return "response_put";
  if (r.response_range) return "response_range";
  if (r.response_delete_range) return "response_delete_range";
  if (r.response_txn) return "response_txn";
  return "none";
}

function keysOf(txn: ITxnRequest): string[] {
  const keys: string[] = [];
  for (const o of [...(txn.success ?? []), ...(txn.failure ?? [])]) {
    if (o.request_put) keys.push(o.request_put.key!.toString());
    if (o.request_txn) keys.push(...keysOf(o.request_txn));
  }
  return keys;
}
