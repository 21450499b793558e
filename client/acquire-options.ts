// What an acquisition may ask (AcquireOptions), and what describe() and observe() answer: the client's
// vocabulary, apart from the client itself, so that the recipes built on it (election.ts) need not import
// the client.
import type { Value } from "./store.js";
import type { Token } from "./token.js";

export interface AcquireOptions {
  /** The lease's TTL in ms; etcd grants whole seconds, at least 2 s. Default 10000. */
  ttl?: number;
  /** false (default): fail with ResourceHeldError if held. true: wait in line. A number: wait at most that many ms. */
  wait?: boolean | number;
  /** Aborting it cancels a waiting acquire, and once granted, releases the lease. */
  signal?: AbortSignal;
  /** Overrides ClientOptions.holder. */
  holder?: string;
  /**
   * An etcd lease of its own for this acquisition, not the client's session: for a TTL of its own that
   * other acquisitions must not share the fate of, a holder that must be able to lose this lock without
   * losing the others, or a lock-delay (lockDelay and preempt always take a lease of their own). Default
   * false (on the session, unless ClientOptions.sessions is false).
   */
  ownLease?: boolean;
  /**
   * Lock-delay, in ms (etcd keeps whole seconds, rounded up): if this lease expires (it is not released),
   * nobody is granted the resource for this long afterwards. Default 0: none. Always on a lease of its
   * own, also with ClientOptions.sessions. See docs/lock-delay.md.
   */
  lockDelay?: number;
  /**
   * A shared acquisition (docs/shared-leases.md): held beside other shared ones, while no exclusive one
   * holds or waits. Its token reads; the fenced store refuses its writes. Default false: exclusive.
   */
  shared?: boolean;
  /**
   * A value published with the acquisition (at most 1 MiB; a string goes as UTF-8), shown by describe(),
   * observe(), leader() and observeLeaders() until Lease.proclaim() changes it. For an election: what
   * followers need of their leader, such as its address. Default: none.
   */
  value?: Value;
  /**
   * A counting semaphore (docs/semaphores.md): a shared acquisition granted while fewer than this many
   * hold, in line first come first served. Implies shared. Every acquisition of the resource must name
   * the same number while anyone holds or waits: another is a FencekeeperError with reason
   * MAX_HOLDERS_MISMATCH (FAILED_PRECONDITION). Default: no cap.
   */
  maxHolders?: number;
  /**
   * Take the resource from whoever holds it, at once (docs/preemption.md): for an orchestrator that
   * knows the holder is gone. The old holder's writes are refused from then on, and its lease is lost
   * with why "preempted" (a PreemptedError cause) at its next renewal; waiters stay behind this one.
   * Needs the policy verb preempt (or admin). Exclusive, on a lease of its own, without lockDelay;
   * never waits. Default false.
   */
  preempt?: boolean;
}

/** The options of acquireAll(): the subset of AcquireOptions that applies to every resource of the set. */
export type AcquireAllOptions = Pick<AcquireOptions, "ttl" | "wait" | "signal" | "holder" | "ownLease">;

/** One holder of a resource: its token's shared says whether it is exclusive or shared. */
export interface Holder {
  holder: string;
  token: Token;
  /** Describe only: the TTL left on its lease, as etcd reports it (whole seconds), in ms. */
  ttlMs?: number;
  /** The value it published (AcquireOptions.value, Lease.proclaim()); empty without one. */
  value: Uint8Array;
}

export interface Description {
  /** Held exclusively, or by shared holders. */
  held: boolean;
  /** The exclusive holder's label, token, TTL and value; unset when the holders are shared. */
  holder?: string;
  token?: Token;
  value?: Uint8Array;
  /** The TTL left on the holder's lease, as etcd reports it (whole seconds), in ms. */
  ttlMs?: number;
  /** Every holder: the exclusive one, or the shared ones, oldest first. */
  holders: Holder[];
  /** The shared holders' semaphore size (AcquireOptions.maxHolders); 0 when they are not a semaphore's. */
  maxHolders: number;
  waiters: number;
  fence: bigint;
  lastIssued: bigint;
  /** The holder's lock-delay in ms, or, in a lock-delay, the one being served. */
  lockDelay?: number;
  /** Set while the resource is in a lock-delay (its holder's lease expired): about when it ends. */
  lockDelayUntil?: Date;
}

export interface Ownership {
  /** Held exclusively, or by shared holders. */
  held: boolean;
  /** The exclusive holder's label, token and value; unset when the holders are shared. */
  holder?: string;
  token?: Token;
  /** A Proclaim of the same holder is a change of its own: the same token, a new value. */
  value?: Uint8Array;
  /** Every holder after this change, and the shared holders that joined and left since the previous one. */
  holders: Holder[];
  joined: Holder[];
  left: Holder[];
  /** As Description.maxHolders. */
  maxHolders: number;
  /** The etcd revision at which this state took effect. */
  revision: bigint;
  /** As Description.lockDelay: the new holder's lock-delay in ms, or the one being served. */
  lockDelay?: number;
  /** Set when the resource has entered a lock-delay: about when it ends. */
  lockDelayUntil?: Date;
  /**
   * Set when changes before this one were left out: the reader fell behind by more than the server keeps
   * for it, and this is the state when it was sent (joined and left are then empty).
   */
  missedChanges?: boolean;
}

