// Every write fencekeeper makes to etcd's key space goes through the committer, as a conditional
// transaction that commits all or nothing. It commits by group: the transactions that arrive while
// earlier requests are in flight are packed into the next etcd request as nested transactions, so that
// one round trip commits many independent writes, each still checked and applied on its own. A
// transaction that arrives when there is room goes out at once: one writer waits for nobody.
//
// What etcd allows in one request bounds a batch, and so does what each transaction must see:
//  - no key may be written twice in one request, over all its nested transactions and both branches:
//    a transaction that would write a key already in the batch waits for the next one (and so do the
//    later ones that touch a key it touches, so that each key's transactions keep their order);
//  - etcd evaluates every compare of a request before it applies any write, so a transaction whose
//    compares read a key that another writes would judge a state the request changes at the same
//    revision (a write under FENCE_MODE_LIVE beside the release of its lease): such transactions go
//    in different requests, so that each is judged on the state it commits on;
//  - at most maxTxnOps operations, counted as etcd does: the outer operations plus the largest nested
//    transaction's own count, recursively;
//  - at most maxRequestBytes.
// Guarded transactions of one group (the mutations of one resource under one token) share one inner
// transaction: the same compares, the same failure reads, and their shared writes (the fence) once.
// Each member gets the answer it would have got alone: the group succeeds or fails as a whole, and
// every member's compares are the group's.
//
// A transaction queued under a Hold (the writes of one Batch call) waits until every write of its
// hold is queued, and then they go out together: see hold.ts.
//
// A guarded transaction may change its resource's stored bytes (a UsageChange: the quota of
// --max-bytes-per-resource). The resource's usage key then goes in the group's transaction, compared at
// the mod revision the committer last knew it at and rewritten with the group's total change, so that
// the quota is decided in the transaction that writes. The committer remembers what its
// own commits left in usage keys and entries, so a write of a resource it knows needs no read first
// (fenced-store.ts reads only on a miss), and concurrent writes of one resource do not read the counter
// again. While a request that rewrites a usage key is in flight, the transactions of that resource wait
// for its answer and then go together in the next request: etcd may apply two requests in flight in
// either order, so one built on what the other will leave would often find the counter not yet there.
// A member that would take the usage past the limit joins no group; it goes alone as a transaction that
// only compares (the usage is what the committer knows, and the entries and the guard hold), and its
// success is the refusal. When the usage key is not where the committer thought (another replica wrote
// the resource), the group learns its value from the failure branch and goes again.
//
// A UsageChange may also be charged to a ledger: the payer's key of --max-store-bytes-per-caller, which
// counts the bytes of every resource whose payer it is. Many resources' transactions charge one ledger,
// and no key may be written twice in one request, so the transactions of one ledger in a request make one
// unit: each compares what all of them compare (the ledger's mod revision too), so that they commit or
// fail together, on the state before the request; the unit's first rewrites the ledger with the unit's
// total. A member whose resource's payer is not the one it was built for (a takeover came between:
// store/store-payer.ts) is answered `again`, to be built anew.
import type { Etcd3, ICompare, IRequestOp, IResponseOp, ITxnRequest, ITxnResponse } from "etcd3";
import type { EtcdCalls } from "./calls.js";
import { EtcdLeaseNotFound, EtcdRefused } from "./classify.js";
import { decodeUsage, encodeUsage } from "./keys.js";
import type { HoldMember } from "./hold.js";
import { cmp, op } from "./ops.js";
import { activeContext, inContext, linkToActive } from "../tracing/tracer.js";
import type { Context } from "@opentelemetry/api";

export interface Txn {
  compare: ICompare[];
  success: IRequestOp[];
  failure: IRequestOp[];
}

/** A guard that transactions of one group share; key names the group (resource, token and mode). */
export interface Guard {
  key: string;
  compare: ICompare[];
  /** Written once for the whole group when it succeeds (the fence). */
  shared: IRequestOp[];
  /** Read when the compares fail, to say why. */
  failure: IRequestOp[];
}

/**
 * A key as known at revision seen: its mod revision (0: absent), and the bytes it counts (for the usage
 * key, the resource's stored bytes, and its payer; for an entry, its key and value; for a ledger, the
 * bytes charged to its principal).
 */
export interface Known {
  mod: bigint;
  bytes: bigint;
  seen: bigint;
  payer?: string;
}

/** What a guarded transaction changes in its resource's stored bytes, under the quota. */
export interface UsageChange {
  /** The resource's usage key, as read. */
  key: Buffer;
  read: Known;
  limit: bigint;
  /** The entries it writes: each as read, and the bytes it leaves there (0: deleted). */
  entries: { key: Buffer; read: Known; after: bigint }[];
  /**
   * The payer it was built for, which its usage key names after it: it goes only while the resource's
   * payer is this one, or the resource stores nothing. Undefined: whatever payer the key names stays.
   */
  payer?: string;
  /** The payer's ledger (--max-store-bytes-per-caller), charged the change too. */
  ledger?: { key: Buffer; read: Known; limit: bigint };
}

/** Which budget refused a change: the resource's quota, or its payer's ledger. */
export type QuotaOf = "resource" | "caller";

export interface Outcome {
  succeeded: boolean;
  /** Set when the transaction was refused for the quota: the usage it found, and the limit. Nothing was written. */
  quota?: { of: QuotaOf; usage: bigint; limit: bigint; delta: bigint };
  /** Set when the resource's payer is not the one the change was built for: nothing was sent; build it again. */
  again?: boolean;
  /** The revision of the request that committed (or read) this transaction. */
  revision: bigint;
  /** The responses of the branch taken: for a guarded transaction, of its own writes or of the guard's reads. */
  responses: IResponseOp[];
}

export interface CommitterLimits {
  /** etcd's --max-txn-ops: operations in one request, nested ones counted as etcd counts them. */
  maxTxnOps: number;
  /** A budget below etcd's --max-request-bytes for one request. */
  maxRequestBytes: number;
  /** Most etcd requests in flight at once; more transactions wait and go out together. */
  maxInFlight: number;
}

interface Pending {
  what: string;
  txn?: Txn;
  guard?: Guard;
  own?: IRequestOp[];
  usage?: UsageChange;
  /** Set when placed: its change to the usage, and the compares that hold what it was computed from. */
  change?: { delta: bigint; compare: ICompare[] };
  writes: string[];
  /** Keys its compares read (range compares aside: see comparedKeys). */
  compares: string[];
  bytes: number;
  /** Sent in a request of its own: it was in a batch that etcd refused as a whole. */
  alone: boolean;
  /** Not sent before this hold opens. */
  held?: HoldMember;
  /** The trace context it was queued in (tracing on): its request's span links to it. */
  trace?: Context;
  resolve(o: Outcome): void;
  reject(err: unknown): void;
}

/** One nested transaction of a request, with the pending transactions it answers. */
interface Inner {
  guard?: Guard;
  txn?: Txn;
  members: Pending[];
  /** For a guarded inner: where each member's own writes start in success, and success's length. */
  offsets: number[];
  successLength: number;
  /** For a guarded inner: the guard's writes (and the usage key's) that start success. */
  sharedLength: number;
  compareLength: number;
  /** The usage key it compares and rewrites: at current, changed by total; and its payer's ledger, at ledger. */
  usage?: { key: Buffer; current: Known; total: bigint; limit: bigint; payer: string; ledger?: Known & { key: Buffer; limit: bigint } };
  /** The ledger unit it commits in, charged with the others of the request (its first writes the ledger). */
  unit?: Unit;
  /** Only checks that the usage is current, for a member over the quota: success is its refusal. */
  check: boolean;
  /** For a check: which budget it is over. */
  over?: QuotaOf;
  /** Its operation count as etcd counts it. */
  size: number;
}

/** The transactions of one request charged to one ledger: they commit together (see the top). */
interface Unit {
  key: Buffer;
  current: Known;
  total: bigint;
  limit: bigint;
  inners: Inner[];
  /** The compares of all its inners (the ledger's aside), and their bytes. */
  compareLength: number;
  compareBytes: number;
  /** Built when the request is: what each of its inners compares. */
  compare?: ICompare[];
}

export class Committer {
  private queue: Pending[] = [];
  private inFlight = 0;
  /**
   * Usage keys and entries as this committer's last requests found or left them, by key: a transaction
   * placed after a commit of its resource is judged on what that commit left, not on its stale read.
   */
  private readonly known = new Map<string, Known>();
  /**
   * Usage keys that a request in flight rewrites: a transaction of the same resource waits for its
   * answer (and then joins the next request with everything else that waited), rather than go out
   * beside it on a usage that request is about to change.
   */
  private readonly busy = new Set<string>();

  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
    private readonly limits: CommitterLimits,
  ) {}

  /** Commits one transaction. Failing compares are an answer (succeeded = false), not an error. */
  commit(what: string, txn: Txn): Promise<Outcome> {
    return this.enqueue({ what, txn, writes: writtenKeys(txn), compares: comparedKeys(txn), bytes: txnBytes(txn) });
  }

  /**
   * Commits own writes under a guard that transactions of the same group may share; with usage, also
   * under the resource's quota (an Outcome with quota set is the refusal).
   */
  commitGuarded(what: string, guard: Guard, own: IRequestOp[], usage?: UsageChange, held?: HoldMember): Promise<Outcome> {
    const guardTxn = { compare: guard.compare, success: guard.shared, failure: guard.failure };
    const usageKey = usage ? [usage.key.toString("latin1")] : [];
    return this.enqueue({
      what,
      guard,
      own,
      held,
      usage,
      writes: [...writtenKeys(guardTxn), ...writtenKeys({ compare: [], success: own, failure: [] }), ...usageKey],
      compares: [...comparedKeys(guardTxn), ...usageKey, ...(usage ? usage.entries.map((e) => e.key.toString("latin1")) : [])],
      bytes:
        txnBytes(guardTxn) +
        opsBytes(own) +
        (usage ? (OP_OVERHEAD + usage.key.length) * 3 + usage.entries.reduce((n, e) => n + e.key.length + OP_OVERHEAD, 0) : 0) +
        (usage?.ledger ? (OP_OVERHEAD + usage.ledger.key.length) * 3 : 0),
    });
  }

  /** A key as last known: the caller's read, or what a later request of this committer saw. */
  private latest(key: Buffer, read: Known): Known {
    const known = this.known.get(key.toString("latin1"));
    return known && known.seen > read.seen ? known : read;
  }

  private remember(key: Buffer, state: Known): void {
    // A cache: the caller's read is the fallback, so forgetting everything costs a retry at most.
    if (this.known.size >= 100_000) this.known.clear();
    const k = key.toString("latin1");
    // Answers may come back in another order than their commits: keep the latest.
    const had = this.known.get(k);
    if (!had || had.seen <= state.seen) this.known.set(k, state);
  }

  /**
   * A usage key or ledger as this committer last wrote or read it; undefined when it does not know it (a
   * transaction of it is then built on a read).
   */
  knownUsage(key: Buffer): Known | undefined {
    return this.known.get(key.toString("latin1"));
  }

  /** What a transaction committed outside the groups left in a usage key or a ledger (store-payer.ts). */
  learn(key: Buffer, state: Known): void {
    this.remember(key, state);
  }

  /** Whether the resource's payer is no longer the one the change was built for (it stores bytes charged to another). */
  private payerMoved(u: UsageChange): boolean {
    if (u.payer === undefined) return false;
    const now = this.latest(u.key, u.read);
    return now.bytes > 0n && (now.payer ?? "") !== u.payer;
  }

  /** A transaction's change to its usage, on the latest known state of the entries it writes. */
  private changeOf(u: UsageChange): { delta: bigint; compare: ICompare[] } {
    let delta = 0n;
    const compare = u.entries.map((e) => {
      const now = this.latest(e.key, e.read);
      delta += e.after - now.bytes;
      return cmp.modAt(e.key, now.mod);
    });
    return { delta, compare };
  }

  private enqueue(p: Omit<Pending, "resolve" | "reject" | "alone">): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.queue.push({ ...p, alone: false, trace: activeContext(), resolve, reject });
      if (p.held && !p.held.hold.open) {
        p.held.hold.onOpen(this.pumpNow);
        p.held.arrived();
        return;
      }
      this.pump();
    });
  }

  private readonly pumpNow = () => this.pump();

  private pump(): void {
    while (this.inFlight < this.limits.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      // Everything queued waits for a hold, or for a request in flight (its resource's usage): the
      // hold's opening or the answer pumps again.
      if (batch.length === 0) return;
      this.inFlight++;
      // Traced as the first member's work: the request's span is its child, and every member links to it.
      void inContext(batch[0].members[0].trace, () => this.send(batch)).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** Takes from the queue, in order, what fits one request. */
  private take(): Inner[] {
    const { maxTxnOps, maxRequestBytes } = this.limits;
    const inners: Inner[] = [];
    const byGuard = new Map<string, Inner>();
    const units = new Map<string, Unit>();
    // Keys the request writes and compares, and keys of transactions left for a later request: a
    // transaction that touches one of those waits too, so that each key's transactions keep their order.
    const written = new Set<string>();
    const compared = new Set<string>();
    const blocked = new Set<string>();
    let bytes = 0;
    let largest = 0;
    let closed = false;
    const fits = (count: number, size: number) => (count <= 1 ? size <= maxTxnOps : count + Math.max(largest, size) <= maxTxnOps);
    const disjoint = (keys: string[], a: Set<string>, b?: Set<string>) => {
      for (const k of keys) if (a.has(k) || b?.has(k)) return false;
      return true;
    };
    const add = (keys: string[], to: Set<string>) => {
      for (const k of keys) to.add(k);
    };
    // A unit's inners each compare all its compares, and (with others) in their failure branch their own:
    // their size as etcd counts it, at most (a unit of one has no such branch).
    const unitSize = (unit: Unit, inner: Inner, compareLength = unit.compareLength) =>
      Math.max(inner.successLength, inner.guard!.failure.length + 3, compareLength + 1) + inner.compareLength;
    const unitLargest = (unit: Unit, compareLength: number) => Math.max(0, ...unit.inners.map((i) => unitSize(unit, i, compareLength)));

    const place = (p: Pending): boolean => {
      if (p.usage && this.busy.has(p.usage.key.toString("latin1"))) return false;
      const ledger = p.usage?.ledger;
      const ledgerKey = ledger?.key.toString("latin1");
      if (ledgerKey !== undefined && this.busy.has(ledgerKey)) return false;
      if (closed || !disjoint(p.writes, blocked) || !disjoint(p.compares, blocked)) return false;
      if (inners.length > 0 && (p.alone || bytes + p.bytes > maxRequestBytes)) return false;
      const group = p.guard && !p.alone ? byGuard.get(p.guard.key) : undefined;
      if (group) {
        if (!p.usage !== !group.usage) return false;
        if (ledgerKey !== group.unit?.key.toString("latin1")) return false;
        if (p.usage) p.change = this.changeOf(p.usage);
        if (p.change && over(group.usage!.current.bytes + group.usage!.total, p.change.delta, group.usage!.limit)) return false;
        const unit = group.unit;
        if (unit && p.change && over(unit.current.bytes + unit.total, p.change.delta, unit.limit)) return false;
        // Only its own writes are new to the request: the guard's are in it already.
        const ownKeys = writtenKeys({ compare: [], success: p.own!, failure: [] });
        const more = p.change?.compare.length ?? 0;
        const compareLength = group.compareLength + more;
        let size = Math.max(group.size, group.successLength + p.own!.length, compareLength);
        if (unit) size = Math.max(group.successLength + p.own!.length, group.guard!.failure.length + 3, unit.compareLength + more + 1) + compareLength;
        const others = unit ? unitLargest(unit, unit.compareLength + more) : 0;
        if (!disjoint(ownKeys, written, compared) || !fits(inners.length, Math.max(size, others))) return false;
        group.offsets.push(group.successLength);
        group.successLength += p.own!.length;
        group.compareLength = compareLength;
        if (p.change) group.usage!.total += p.change.delta;
        if (unit) {
          unit.compareLength += more;
          unit.total += p.change!.delta;
          for (const i of unit.inners) if (i !== group) i.size = unitSize(unit, i);
          largest = Math.max(largest, others);
        }
        group.members.push(p);
        group.size = size;
        largest = Math.max(largest, size);
        add(ownKeys, written);
        bytes += p.bytes + (unit ? unit.inners.length * compareBytes(p.change!.compare) : 0);
        return true;
      }
      if (!disjoint(p.writes, written, compared) || !disjoint(p.compares, written)) return false;
      let unit = ledgerKey !== undefined ? units.get(ledgerKey) : undefined;
      // A ledger that a transaction outside its unit writes or compares waits for the next request.
      if (ledgerKey !== undefined && !unit && (written.has(ledgerKey) || compared.has(ledgerKey) || blocked.has(ledgerKey))) return false;
      let inner: Inner;
      if (p.guard) {
        const current = p.usage && this.latest(p.usage.key, p.usage.read);
        if (p.usage) p.change = this.changeOf(p.usage);
        const book = ledger && (unit ? { ...unit.current, bytes: unit.current.bytes + unit.total } : this.latest(ledger.key, ledger.read));
        const overResource = p.change !== undefined && over(current!.bytes, p.change.delta, p.usage!.limit);
        const overLedger = !overResource && book !== undefined && over(book.bytes, p.change!.delta, ledger!.limit);
        // Over its payer's ledger only with the unit's charges: it waits for their answer.
        if (unit && overLedger) return false;
        const check = overResource || overLedger;
        const writesLedger = ledger !== undefined && !check && !unit;
        const sharedLength = p.guard.shared.length + (p.usage && !check ? 1 : 0) + (writesLedger ? 1 : 0);
        inner = {
          guard: p.guard,
          members: [p],
          offsets: [sharedLength],
          successLength: sharedLength + p.own!.length,
          sharedLength,
          compareLength: p.guard.compare.length + (p.change ? 1 + p.change.compare.length : 0),
          usage: p.usage && {
            key: p.usage.key,
            current: current!,
            total: p.change!.delta,
            limit: p.usage.limit,
            payer: p.usage.payer ?? current!.payer ?? "",
            // A check compares the ledger only when it is the ledger that refuses.
            ledger: ledger && (!check || overLedger) ? { ...this.latest(ledger.key, ledger.read), key: ledger.key, limit: ledger.limit } : undefined,
          },
          check,
          over: overResource ? "resource" : overLedger ? "caller" : undefined,
          size: 0,
        };
      } else inner = { txn: p.txn, members: [p], offsets: [], successLength: 0, sharedLength: 0, compareLength: 0, check: false, size: 0 };
      inner.size = txnSize(innerTxn(inner));
      const joins = unit !== undefined && !inner.check;
      const size = joins ? Math.max(unitSize(unit!, inner, unit!.compareLength + inner.compareLength), unitLargest(unit!, unit!.compareLength + inner.compareLength)) : inner.size;
      // One that fits no request goes alone, and etcd's refusal is its answer.
      if (inners.length > 0 && !fits(inners.length + 1, size)) return false;
      if (joins) {
        const own = compareBytes(ownCompare(inner));
        inner.unit = unit;
        inner.usage!.ledger = { ...unit!.current, key: unit!.key, limit: unit!.limit };
        bytes += own * unit!.inners.length + unit!.compareBytes;
        unit!.inners.push(inner);
        unit!.compareLength += inner.compareLength;
        unit!.compareBytes += own;
        unit!.total += p.change!.delta;
        for (const i of unit!.inners) i.size = unitSize(unit!, i);
        largest = Math.max(largest, size);
      } else if (ledger && !inner.check) {
        unit = {
          key: ledger.key,
          current: this.latest(ledger.key, ledger.read),
          total: p.change!.delta,
          limit: ledger.limit,
          inners: [inner],
          compareLength: inner.compareLength,
          compareBytes: compareBytes(ownCompare(inner)),
        };
        inner.unit = unit;
        units.set(ledgerKey!, unit);
        inner.size = unitSize(unit, inner);
      }
      inners.push(inner);
      if (p.guard && !p.alone && !inner.check) byGuard.set(p.guard.key, inner);
      largest = Math.max(largest, inner.size);
      add(p.writes, written);
      add(p.compares, compared);
      // The ledger is the unit's: its first writes it, a check compares it.
      if (ledgerKey !== undefined && inner.unit) add([ledgerKey], written);
      else if (ledgerKey !== undefined && inner.usage?.ledger) add([ledgerKey], compared);
      bytes += p.bytes;
      closed = p.alone;
      return true;
    };

    const rest: Pending[] = [];
    for (let i = 0; i < this.queue.length; i++) {
      const p = this.queue[i];
      if (p.held && !p.held.hold.open) {
        rest.push(p);
        add(p.writes, blocked);
        add(p.compares, blocked);
        continue;
      }
      // A request with no room for one more transaction takes nothing more: the rest wait as they are.
      if (closed || inners.length + 1 + largest > maxTxnOps) {
        rest.push(...this.queue.slice(i));
        break;
      }
      // Built for a payer that has changed: its writer builds it again (taking the resource over, if it puts).
      if (p.usage && this.payerMoved(p.usage)) {
        p.resolve({ succeeded: false, again: true, revision: 0n, responses: [] });
        continue;
      }
      if (place(p)) continue;
      rest.push(p);
      add(p.writes, blocked);
      add(p.compares, blocked);
    }
    this.queue = rest;
    return inners;
  }

  private async send(inners: Inner[]): Promise<void> {
    const members = inners.flatMap((i) => i.members);
    const whats = new Set(members.map((m) => m.what));
    const what = whats.size === 1 ? members[0].what : "batch";
    const usageKeys = inners.flatMap((i) => (i.usage ? [i.usage.key, ...(i.usage.ledger ? [i.usage.ledger.key] : [])].map((k) => k.toString("latin1")) : []));
    for (const k of usageKeys) this.busy.add(k);
    try {
      await this.sendNow(inners, members, what);
    } finally {
      for (const k of usageKeys) this.busy.delete(k);
    }
  }

  private async sendNow(inners: Inner[], members: Pending[], what: string): Promise<void> {
    let res: ITxnResponse;
    // One etcd request serves many calls: with tracing on, each member's span links to the request's.
    const txn = (req: ITxnRequest) => () => {
      if (members.length > 1 && members[0].trace) linkToActive(members.map((m) => m.trace));
      return this.etcd.kv.txn(req);
    };
    try {
      if (inners.length === 1) {
        res = await this.calls.run(what, txn(innerTxn(inners[0])), members.length);
      } else {
        const outer = { compare: [], success: inners.map((i) => ({ request_txn: innerTxn(i) })), failure: [] };
        res = await this.calls.run(what, txn(outer), members.length);
      }
    } catch (err) {
      // etcd refuses a whole request for what one of its transactions asks (a lease that is gone, a
      // request too large): send each on its own, so that only the one at fault hears of it.
      if (members.length > 1 && (err instanceof EtcdRefused || err instanceof EtcdLeaseNotFound)) {
        for (const m of members) m.alone = true;
        this.queue.unshift(...members);
        return;
      }
      for (const m of members) m.reject(err);
      return;
    }
    const revision = BigInt(res.header.revision);
    const again: Pending[] = [];
    inners.forEach((inner, i) => {
      const r = inners.length === 1 ? res : res.responses[i].response_txn;
      again.push(...this.answer(inner, r.succeeded, revision, r.responses));
    });
    this.queue.unshift(...again);
  }

  /** Answers the members of one inner transaction; returns those that must go again. */
  private answer(inner: Inner, succeeded: boolean, revision: bigint, responses: IResponseOp[]): Pending[] {
    if (!inner.guard) {
      inner.members[0].resolve({ succeeded, revision, responses });
      return [];
    }
    const u = inner.usage;
    if (u && !succeeded) {
      // The failure branch ends with the usage key (and the ledger): if one moved, the compares judged a
      // stale usage.
      // In a unit of several, last comes whether its own compares held (innerTxn).
      const ownHeld = several(inner) && responses[responses.length - 1].response_txn.succeeded;
      if (several(inner)) responses = responses.slice(0, -1);
      const ledger = u.ledger && { ...decodeUsage(responses[responses.length - 1].response_range.kvs[0]), seen: revision };
      if (ledger) responses = responses.slice(0, -1);
      const now = { ...decodeUsage(responses[responses.length - 1].response_range.kvs[0]), seen: revision };
      responses = responses.slice(0, -1);
      const ledgerMoved = ledger !== undefined && ledger.mod !== u.ledger!.mod;
      if (ledgerMoved) this.remember(u.ledger!.key, ledger);
      if (now.mod !== u.current.mod) this.remember(u.key, now);
      if (ledgerMoved || now.mod !== u.current.mod) return inner.members;
      // Its unit failed for another of its inners, not for what this one compares: it goes again.
      if (ownHeld) return inner.members;
      // The fence refused, or an entry is not as known (written elsewhere, or etcd lost its data and
      // its revisions began again): the next attempt judges the entries on the caller's new read.
      for (const m of inner.members) for (const e of m.usage!.entries) this.known.delete(e.key.toString("latin1"));
    }
    if (u && succeeded && inner.check) {
      // The usage is as known and the guard holds: the write would take the resource over its quota, or
      // its payer over its ledger.
      const m = inner.members[0];
      const quota =
        inner.over === "caller"
          ? { of: "caller" as const, usage: u.ledger!.bytes, limit: u.ledger!.limit, delta: m.change!.delta }
          : { of: "resource" as const, usage: u.current.bytes, limit: u.limit, delta: m.change!.delta };
      m.resolve({ succeeded: false, revision, responses: [], quota });
      return [];
    }
    if (u && succeeded) {
      this.remember(u.key, { bytes: clamp(u.current.bytes + u.total), mod: revision, seen: revision, payer: u.payer });
      const unit = inner.unit;
      if (unit) this.remember(unit.key, { bytes: clamp(unit.current.bytes + unit.total), mod: revision, seen: revision });
      for (const m of inner.members) {
        for (const e of m.usage!.entries) this.remember(e.key, { bytes: e.after, mod: e.after > 0n ? revision : 0n, seen: revision });
      }
    }
    inner.members.forEach((m, i) => {
      const from = inner.offsets[i];
      const own = succeeded ? responses.slice(from, from + m.own!.length) : responses;
      m.resolve({ succeeded, revision, responses: own });
    });
    return [];
  }
}

/** A change that would take usage bytes past its limit (freeing bytes never is). */
function over(bytes: bigint, delta: bigint, limit: bigint): boolean {
  return delta > 0n && bytes + delta > limit;
}

const clamp = (bytes: bigint) => (bytes < 0n ? 0n : bytes);

function innerTxn(inner: Inner): ITxnRequest {
  if (!inner.guard) return inner.txn!;
  const own = inner.members.flatMap((m) => m.own!);
  const u = inner.usage;
  if (!u) return { compare: inner.guard.compare, success: [...inner.guard.shared, ...own], failure: inner.guard.failure };
  const ledger = u.ledger;
  const compare = inner.unit ? unitCompare(inner.unit) : ledger ? [...ownCompare(inner), cmp.modAt(ledger.key, ledger.mod)] : ownCompare(inner);
  // In a unit of several, the failure branch also says whether its own compares held: if they did,
  // another inner of the unit failed it, and it goes again. (Alone, it needs not say, and a Txn of
  // --max-txn-ops operations would not fit etcd's limit with its compares twice.)
  const failure = [
    ...inner.guard.failure,
    op.get(u.key),
    ...(ledger ? [op.get(ledger.key)] : []),
    ...(several(inner) ? [{ request_txn: { compare: ownCompare(inner), success: [], failure: [] } }] : []),
  ];
  if (inner.check) return { compare, success: [], failure };
  const unit = inner.unit;
  const ledgerPut = unit && unit.inners[0] === inner ? [op.put(unit.key, encodeUsage(clamp(unit.current.bytes + unit.total)))] : [];
  return {
    compare,
    success: [...inner.guard.shared, op.put(u.key, encodeUsage(clamp(u.current.bytes + u.total), u.payer)), ...ledgerPut, ...own],
    failure,
  };
}

/**
 * What a guarded inner with usage compares on its own: the guard, the usage key, and the entries' compares,
 * which hold the change as computed, in a refusal for the quota too (an entry taken as absent that was
 * there would make the change larger than it is).
 */
function ownCompare(inner: Inner): ICompare[] {
  return [...inner.guard!.compare, cmp.modAt(inner.usage!.key, inner.usage!.current.mod), ...inner.members.flatMap((m) => m.change!.compare)];
}

/** Whether an inner commits in a unit with others (whose compares it makes too). */
const several = (inner: Inner) => inner.unit !== undefined && inner.unit.inners.length > 1;

/** What every inner of a unit compares: the ledger, and what each of them compares on its own. */
function unitCompare(unit: Unit): ICompare[] {
  // Built once the request is taken (its inners are all there), and then once for all of them.
  if (unit.compare?.length !== unit.compareLength + 1) unit.compare = [cmp.modAt(unit.key, unit.current.mod), ...unit.inners.flatMap(ownCompare)];
  return unit.compare;
}

function compareBytes(compare: ICompare[] | undefined): number {
  let n = 0;
  for (const c of compare ?? []) n += (c.key?.length ?? 0) + (c.range_end?.length ?? 0) + (c.value?.length ?? 0) + OP_OVERHEAD;
  return n;
}

/** The operation count etcd checks: this level's largest list, plus the largest nested transaction's. */
function txnSize(txn: ITxnRequest): number {
  const own = Math.max(txn.compare?.length ?? 0, txn.success?.length ?? 0, txn.failure?.length ?? 0);
  let nested = 0;
  for (const o of [...(txn.success ?? []), ...(txn.failure ?? [])]) {
    if (o.request_txn) nested = Math.max(nested, txnSize(o.request_txn));
  }
  return own + nested;
}

/**
 * The keys a transaction's compares read, nested ones included. A compare over a range is left out:
 * the ones we make (a line is empty, or nobody in it is older) may see a newcomer of the same request or
 * not, as if it had come just before or just after, and either is an answer the caller could get alone.
 */
function comparedKeys(txn: Pick<ITxnRequest, "compare" | "success" | "failure">): string[] {
  const keys: string[] = [];
  const visit = (t: ITxnRequest) => {
    for (const c of t.compare ?? []) if (!c.range_end) keys.push(c.key!.toString("latin1"));
    for (const o of [...(t.success ?? []), ...(t.failure ?? [])]) if (o.request_txn) visit(o.request_txn);
  };
  visit(txn);
  return keys;
}

/** Every key a transaction writes, in either branch, nested ones included. */
function writtenKeys(txn: ITxnRequest): string[] {
  const keys: string[] = [];
  const visit = (ops: IRequestOp[] | undefined) => {
    for (const o of ops ?? []) {
      if (o.request_put) keys.push(String(o.request_put.key!.toString("latin1")));
      else if (o.request_delete_range) keys.push(String(o.request_delete_range.key!.toString("latin1")));
      else if (o.request_txn) {
        visit(o.request_txn.success);
        visit(o.request_txn.failure);
      }
    }
  };
  visit(txn.success);
  visit(txn.failure);
  return keys;
}

const OP_OVERHEAD = 16;

function opsBytes(ops: IRequestOp[] | undefined): number {
  let n = 0;
  for (const o of ops ?? []) {
    if (o.request_put) n += o.request_put.key!.length + (o.request_put.value?.length ?? 0) + OP_OVERHEAD;
    else if (o.request_delete_range) n += o.request_delete_range.key!.length + OP_OVERHEAD;
    else if (o.request_range) n += (o.request_range.key?.length ?? 0) + (o.request_range.range_end?.length ?? 0) + OP_OVERHEAD;
    else if (o.request_txn) n += txnBytes(o.request_txn);
  }
  return n;
}

function txnBytes(txn: Pick<ITxnRequest, "compare" | "success" | "failure">): number {
  let n = OP_OVERHEAD;
  for (const c of txn.compare ?? []) n += (c.key?.length ?? 0) + (c.range_end?.length ?? 0) + (c.value?.length ?? 0) + OP_OVERHEAD;
  return n + opsBytes(txn.success) + opsBytes(txn.failure);
}
