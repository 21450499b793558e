// What the domain did, said once the outcome is known: a generation granted or released, a lease renewed
// or found gone, a session opened or closed, a waiter joining or leaving a line, a write committed or
// refused for its token. The lease coordinator, the acquisition and the fenced store emit; the metrics,
// the ownership log and tests listen. Nothing here reads a wire message or asks etcd anything.
//
// Delivery is synchronous and in order, on the emitter's turn (a log line written by a listener carries
// the call's request id): a listener must be quick. One that throws is reported and skipped; the
// operation and the other listeners go on as if it had not been there.
import { DomainError, type Kind, type Reason } from "../errors/errors.js";
import { inSpan } from "../tracing/tracer.js";
import type { AcquireMode } from "../tokens/token.js";

/** How a renewal came in. */
export type RenewalVia = "Renew" | "KeepAlive";

/** The fenced store's mutations. */
export type WriteOp = "put" | "delete" | "txn";

export type DomainEvent =
  /** A generation granted: on a lease of its own (ttlSeconds: what etcd reported for it) or on a session. */
  | { type: "granted"; resource: string; generation: bigint; leaseId: bigint; onSession: boolean; ttlSeconds?: number; waited: boolean; mode: AcquireMode }
  /**
   * A holding ended by a preemption (lease/preemption.ts): generation and leaseId are the old holder's,
   * byGeneration the preemptor's (a "granted" event follows for it), byPrincipal its principal ("" without authentication).
   */
  | { type: "preempted"; resource: string; generation: bigint; leaseId: bigint; byGeneration: bigint; byPrincipal: string }
  /** A generation given up by Release; a lease of its own goes with it (revoked), a session lives on. */
  | { type: "released"; resource: string; generation: bigint; leaseId: bigint; onSession: boolean }
  | { type: "session opened"; sessionId: bigint; ttlSeconds: number }
  /** Closed by CloseSession: its lease is revoked, and every acquisition on it with it. */
  | { type: "session closed"; sessionId: bigint }
  /** etcd renewed the lease: it lasts ttlSeconds from now. */
  | { type: "renewed"; leaseId: bigint; ttlSeconds: number; via: RenewalVia }
  /** A renewal that renewed nothing, and why: not_found (the lease is gone), unavailable (etcd did not answer), ... */
  | { type: "not renewed"; leaseId: bigint; via: RenewalVia; kind: Kind }
  /**
   * etcd says the lease no longer exists (a renewal found it gone, or a session to close was not open):
   * it expired or was revoked, here or elsewhere. A lease that runs out while nobody asks about it
   * makes no event: no replica watches leases.
   */
  | { type: "lease gone"; leaseId: bigint }
  /** An Acquire with wait joined the line of resource; "done waiting" follows once it leaves it, granted or not. */
  | { type: "waiting"; resource: string }
  /** seconds: how long it waited; turn: its turn came (a grant is tried next), else it left the line (deadline, cancel, shutdown). */
  | { type: "done waiting"; resource: string; seconds: number; turn: boolean }
  /** An acquisition, a release or a write refused for what the caller holds (not for etcd failing). */
  | { type: "refused"; operation: "acquire" | "release" | "proclaim" | WriteOp; resource: string; reason: Reason; /** A write's: its token's generation. */ generation?: bigint }
  /** A mutation committed under generation. */
  | { type: "written"; op: WriteOp; resource: string; generation: bigint; revision: bigint };

export type DomainListener = (event: DomainEvent) => void;

export class DomainEvents {
  /** Replaced, never changed in place: a listener added or removed during an emit takes effect at the next. */
  private listeners: readonly DomainListener[] = [];

  /** onListenerError: told of a listener that threw (the server logs it). */
  constructor(private readonly onListenerError: (err: unknown, event: DomainEvent) => void = () => {}) {}

  /** Adds a listener; returns what removes it. */
  on(listener: DomainListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  emit(event: DomainEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        try {
          this.onListenerError(err, event);
        } catch {
          // Reporting failed too: the operation still goes on.
        }
      }
    }
  }
}

/** The reason of an error that refuses the caller, as "refused" carries it; undefined for a failure of etcd or of the server. */
export function refusalOf(err: unknown): Reason | undefined {
  return err instanceof DomainError && err.reason !== "ETCD_UNAVAILABLE" ? err.reason : undefined;
}

/** The kind of a failure, as "not renewed" carries it: anything but a DomainError is internal. */
export function kindOf(err: unknown): Kind {
  return err instanceof DomainError ? err.kind : "internal";
}

/** Runs wait between "waiting" and "done waiting", however it ends. */
export async function inLine<T>(events: DomainEvents, resource: string, wait: () => Promise<T>): Promise<T> {
  // Traced as a span of its own (when tracing is on): the call's etcd requests while it waits are its children.
  return inSpan("wait in line", { "fencekeeper.resource": resource }, () => waiting(events, resource, wait));
}

async function waiting<T>(events: DomainEvents, resource: string, wait: () => Promise<T>): Promise<T> {
  events.emit({ type: "waiting", resource });
  const started = performance.now();
  let turn = false;
  try {
    const result = await wait();
    turn = true;
    return result;
  } finally {
    events.emit({ type: "done waiting", resource, seconds: (performance.now() - started) / 1000, turn });
  }
}
