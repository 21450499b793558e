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
import type { Etcd3, ICompare, IRequestOp, IResponseOp, ITxnRequest, ITxnResponse } from "etcd3";
import type { EtcdCalls } from "./calls.js";
import { EtcdLeaseNotFound, EtcdRefused } from "./errors.js";
import type { HoldMember } from "./hold.js";

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

export interface Outcome {
  succeeded: boolean;
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
  writes: string[];
  /** Keys its compares read (range compares aside: see comparedKeys). */
  compares: string[];
  bytes: number;
  /** Sent in a request of its own: it was in a batch that etcd refused as a whole. */
  alone: boolean;
  /** Not sent before this hold opens. */
  held?: HoldMember;
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
  /** Its operation count as etcd counts it. */
  size: number;
}

export class Committer {
  private queue: Pending[] = [];
  private inFlight = 0;

  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
    private readonly limits: CommitterLimits,
  ) {}

  /** Commits one transaction. Failing compares are an answer (succeeded = false), not an error. */
  commit(what: string, txn: Txn): Promise<Outcome> {
    return this.enqueue({ what, txn, writes: writtenKeys(txn), compares: comparedKeys(txn), bytes: txnBytes(txn) });
  }

  /** Commits own writes under a guard that transactions of the same group may share. */
  commitGuarded(what: string, guard: Guard, own: IRequestOp[], held?: HoldMember): Promise<Outcome> {
    const guardTxn = { compare: guard.compare, success: guard.shared, failure: guard.failure };
    return this.enqueue({
      what,
      guard,
      own,
      writes: [...writtenKeys(guardTxn), ...writtenKeys({ compare: [], success: own, failure: [] })],
      compares: comparedKeys(guardTxn),
      bytes: txnBytes(guardTxn) + opsBytes(own),
      held,
    });
  }

  private enqueue(p: Omit<Pending, "resolve" | "reject" | "alone">): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.queue.push({ ...p, alone: false, resolve, reject });
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
      // Everything queued waits for a hold.
      if (batch.length === 0) return;
      this.inFlight++;
      void this.send(batch).finally(() => {
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

    const place = (p: Pending): boolean => {
      if (closed || !disjoint(p.writes, blocked) || !disjoint(p.compares, blocked)) return false;
      if (inners.length > 0 && (p.alone || bytes + p.bytes > maxRequestBytes)) return false;
      const group = p.guard && !p.alone ? byGuard.get(p.guard.key) : undefined;
      if (group) {
        // Only its own writes are new to the request: the guard's are in it already.
        const ownKeys = writtenKeys({ compare: [], success: p.own!, failure: [] });
        const size = Math.max(group.size, group.successLength + p.own!.length);
        if (!disjoint(ownKeys, written, compared) || !fits(inners.length, size)) return false;
        group.offsets.push(group.successLength);
        group.successLength += p.own!.length;
        group.members.push(p);
        group.size = size;
        largest = Math.max(largest, size);
        add(ownKeys, written);
        bytes += p.bytes;
        return true;
      }
      if (!disjoint(p.writes, written, compared) || !disjoint(p.compares, written)) return false;
      const inner: Inner = p.guard
        ? { guard: p.guard, members: [p], offsets: [p.guard.shared.length], successLength: p.guard.shared.length + p.own!.length, size: 0 }
        : { txn: p.txn, members: [p], offsets: [], successLength: 0, size: 0 };
      inner.size = txnSize(innerTxn(inner));
      // One that fits no request goes alone, and etcd's refusal is its answer.
      if (inners.length > 0 && !fits(inners.length + 1, inner.size)) return false;
      inners.push(inner);
      if (p.guard && !p.alone) byGuard.set(p.guard.key, inner);
      largest = Math.max(largest, inner.size);
      add(p.writes, written);
      add(p.compares, compared);
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
    let res: ITxnResponse;
    try {
      if (inners.length === 1) {
        res = await this.calls.run(what, () => this.etcd.kv.txn(innerTxn(inners[0])));
      } else {
        const outer = { compare: [], success: inners.map((i) => ({ request_txn: innerTxn(i) })), failure: [] };
        res = await this.calls.run(what, () => this.etcd.kv.txn(outer));
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
    inners.forEach((inner, i) => {
      const r = inners.length === 1 ? res : res.responses[i].response_txn;
      answer(inner, r.succeeded, revision, r.responses);
    });
  }
}

function answer(inner: Inner, succeeded: boolean, revision: bigint, responses: IResponseOp[]): void {
  if (!inner.guard) {
    inner.members[0].resolve({ succeeded, revision, responses });
    return;
  }
  inner.members.forEach((m, i) => {
    const from = inner.offsets[i];
    const own = succeeded ? responses.slice(from, from + m.own!.length) : responses;
    m.resolve({ succeeded, revision, responses: own });
  });
}

function innerTxn(inner: Inner): ITxnRequest {
  if (!inner.guard) return inner.txn!;
  return {
    compare: inner.guard.compare,
    success: [...inner.guard.shared, ...inner.members.flatMap((m) => m.own!)],
    failure: inner.guard.failure,
  };
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
function comparedKeys(txn: ITxnRequest): string[] {
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

function txnBytes(txn: ITxnRequest): number {
  let n = OP_OVERHEAD;
  for (const c of txn.compare ?? []) n += (c.key?.length ?? 0) + (c.range_end?.length ?? 0) + (c.value?.length ?? 0) + OP_OVERHEAD;
  return n + opsBytes(txn.success) + opsBytes(txn.failure);
}
