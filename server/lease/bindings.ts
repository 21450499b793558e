// Holder binding for operations that name a lease by its id alone (Renew, KeepAlive, CloseSession):
// with authentication on, an acquisition's or a session's lease carries the principal that made it
// (keys.ts's binding key), and only that principal may keep it alive or close it. A lease without a
// binding is no acquisition of anyone's (an idempotency record's lease, a waiter's place, a lease made
// before authentication was turned on, or one that ended): it is refused like a lease that is gone.
import type { IRequestOp } from "etcd3";
import { leaseNotFound, notHolder } from "../errors/errors.js";
import { decodeBinding, encodeBinding, type KeyLayout } from "../etcd/keys.js";
import { op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";
import { Reads } from "../etcd/reads.js";

/** Most binding keys read in one etcd transaction (etcd allows 128 operations by default). */
const READS_PER_TXN = 100;
/**
 * Most binding reads at etcd at once for the whole replica; the others wait in their caller's queue, and
 * callers take turns. Eight transactions of up to 100 keys keep etcd busy; more only queue there, where
 * they would be served in the order sent, a flood's before a bystander's.
 */
const READS_IN_FLIGHT = 8;

export interface BindingDeps {
  keys: KeyLayout;
  reader: Reader;
}

/** The writes that bind a new lease to its principal, and list it among the principal's leases. */
export function bindOps(keys: KeyLayout, leaseId: bigint, principal: string): IRequestOp[] {
  return [op.put(keys.bindingKey(leaseId), encodeBinding(principal), leaseId), op.put(keys.principalLeaseKey(principal, leaseId), Buffer.alloc(0), leaseId)];
}

interface QueuedRead {
  ids: bigint[];
  resolve(owners: (string | undefined)[]): void;
  reject(err: unknown): void;
}

/**
 * The binding reads of every KeepAlive stream and Renew of this replica, taken in turn per caller (as
 * renewals are, server/etcd/leases.ts): at most READS_IN_FLIGHT transactions at etcd at once, the next
 * one the oldest of the caller whose turn it is. A caller naming thousands of lease ids nobody has costs
 * a read each, and those wait in its own queue: another caller's read goes out within one turn, not
 * behind them in etcd's.
 */
export class BindingReads {
  /** Reads waiting, per caller; the callers in turn order (the next first). */
  private readonly queues = new Map<string, QueuedRead[]>();
  private inFlight = 0;

  constructor(private readonly d: BindingDeps) {}

  /** The principal each lease is bound to (undefined: no binding), read as caller's turn comes. */
  owners(caller: string, ids: bigint[]): Promise<(string | undefined)[]> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(caller);
      if (queue) queue.push({ ids, resolve, reject });
      else this.queues.set(caller, [{ ids, resolve, reject }]);
      this.pump();
    });
  }

  /** Checks, in caller's turn, that a lease is bound to the principal; throws NOT_FOUND or NOT_HOLDER otherwise. */
  async check(caller: string, leaseId: bigint, principal: string, what = "lease"): Promise<void> {
    const [owner] = await this.owners(caller, [leaseId]);
    judge(owner, leaseId, principal, what);
  }

  /**
   * Sends the caller whose turn it is its oldest reads, as many as one transaction takes (READS_PER_TXN
   * ids: a caller's unary Renews waiting together go in one read), while fewer than READS_IN_FLIGHT are
   * at etcd.
   */
  private pump(): void {
    while (this.inFlight < READS_IN_FLIGHT && this.queues.size > 0) {
      const [caller, queue] = this.queues.entries().next().value!;
      const batch = [queue.shift()!];
      let ids = batch[0].ids.length;
      while (queue.length > 0 && ids + queue[0].ids.length <= READS_PER_TXN) {
        ids += queue[0].ids.length;
        batch.push(queue.shift()!);
      }
      this.queues.delete(caller);
      if (queue.length > 0) this.queues.set(caller, queue); // to the back of the turn order
      this.inFlight++;
      this.d.reader
        .snapshot("check binding", Reads.all(batch.map((r) => Reads.each(r.ids.map((id) => ({ key: this.d.keys.bindingKey(id) }))).map((found) => found.map((f) => decodeBinding(f.kvs[0]))))))
        .then(
          (snap) => batch.forEach((r, i) => r.resolve(snap.found[i])),
          (err: unknown) => batch.forEach((r) => r.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}

function judge(owner: string | undefined, leaseId: bigint, principal: string, what: string): void {
  if (owner === undefined) throw leaseNotFound(leaseId);
  if (owner !== principal) throw notHolder(`${what} ${leaseId}`, principal, { lease_id: String(leaseId) });
}

/**
 * The leases one KeepAlive stream may renew: each id is checked once per stream (a lease's binding never
 * changes while it lives), and the ids asked for in one turn of the event loop (one message's, or many
 * one-id messages') are checked together, 100 to an etcd request, in the caller's turn (BindingReads). An id whose check is under way is not
 * read again: a client renewing one id a message faster than etcd answers costs one read per id, not one
 * per message.
 */
export class StreamBindings {
  private readonly verified = new Set<bigint>();
  private waiting = new Map<bigint, { resolve: () => void; reject: (err: unknown) => void }[]>();
  /** Ids being read: their waiters, which later checks of the same id join. */
  private reading = new Map<bigint, { resolve: () => void; reject: (err: unknown) => void }[]>();
  private flushing = false;

  constructor(
    private readonly reads: BindingReads,
    /** Whose turn the stream's reads take (server/etcd/leases.ts's owner: a principal or a connection). */
    private readonly caller: string,
    private readonly principal: string,
    /** What else a renewal needs once the lease is known to be the principal's (the policy's say: RenewalGrants). */
    private readonly allowed?: (leaseId: bigint) => Promise<void> | undefined,
  ) {}

  check(leaseId: bigint): Promise<void> | undefined {
    if (this.verified.has(leaseId)) return this.allowed?.(leaseId);
    const bound = this.bound(leaseId);
    return this.allowed ? bound.then(() => this.allowed!(leaseId)) : bound;
  }

  private bound(leaseId: bigint): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const read = this.reading.get(leaseId);
      if (read) {
        read.push({ resolve, reject });
        return;
      }
      const waiters = this.waiting.get(leaseId);
      if (waiters) waiters.push({ resolve, reject });
      else this.waiting.set(leaseId, [{ resolve, reject }]);
      if (!this.flushing) {
        this.flushing = true;
        // Every id asked for in this turn joins before the reads go out.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    const batch = this.waiting;
    this.waiting = new Map();
    this.flushing = false;
    for (const [id, waiters] of batch) this.reading.set(id, waiters);
    const ids = [...batch.keys()];
    await Promise.all(
      chunks(ids, READS_PER_TXN).map(async (chunk) => {
        try {
          const owners = await this.reads.owners(this.caller, chunk);
          chunk.forEach((id, i) => {
            this.reading.delete(id);
            try {
              judge(owners[i], id, this.principal, "lease");
              this.verified.add(id);
              for (const w of batch.get(id)!) w.resolve();
            } catch (err) {
              for (const w of batch.get(id)!) w.reject(err);
            }
          });
        } catch (err) {
          for (const id of chunk) {
            this.reading.delete(id);
            for (const w of batch.get(id)!) w.reject(err);
          }
        }
      }),
    );
  }
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
