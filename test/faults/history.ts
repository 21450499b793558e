// The history of a run: every operation a client invoked, when, with what, and what came back. Workers
// write one Op per line (JSON) as each answer arrives; the runner collects them. Numbers that are etcd
// revisions or lease ids travel as decimal strings.

export type OpKind = "acquire" | "renew" | "release" | "put" | "delete" | "txn" | "open-session" | "close-session" | "proclaim" | "observe";

/**
 * ok: the server said it was done. fail: the server said it was refused, and so not done.
 * ambiguous: no verdict (timeout, UNAVAILABLE, a cut connection): done or not, only etcd's history
 * can tell. unsent: the client refused on its own before sending (the SDK's lease already lost).
 */
export type Outcome = "ok" | "fail" | "ambiguous" | "unsent";

export type Via = "sdk" | "grpc";

export interface Op {
  client: string;
  via: Via;
  /** The principal the call was made as, when not the client's own (a worker using another principal's credentials). */
  principal?: string;
  /** The operation's number within its client. */
  seq: number;
  kind: OpKind;
  /** Invoked and answered, ms since the epoch (one clock: every process runs on this machine). */
  t0: number;
  t1: number;
  resource: string;
  outcome: Outcome;
  /** The gRPC code name, and the ErrorInfo reason, of a failure. */
  code?: string;
  reason?: string;
  /** The error's message, cut short. */
  message?: string;
  // acquire
  wait?: boolean;
  /** The TTL asked for, ms: the checker bounds the lease's life with it. */
  ttlMs?: number;
  /** A shared acquisition (its grant is a shared holder's key, not the owner key); with maxHolders, a semaphore's permit. */
  shared?: boolean;
  maxHolders?: number;
  /** The session an acquisition was made on (its lease: the owner key is attached to it); open-session and close-session: theirs. */
  session?: string;
  /** The lock-delay asked for, ms. */
  lockDelayMs?: number;
  /** A preempting Acquire (AcquireRequest.preempt). */
  preempt?: boolean;
  /**
   * Acquired together with others in one AcquireAll: the call's resources, comma-separated (one line each,
   * same holder label). A refused call's answer is the refusal of one resource; the others' lines say
   * WITH_ANOTHER (given back because another resource of the call was refused).
   */
  all?: string;
  /**
   * The value an Acquire published (AcquireRequest.value: an election's campaign), or the one a Proclaim
   * set; a Proclaim's is unique in a run, so that the owner key's change in etcd's history names it.
   */
  value?: string;
  // observe: one line per message of an Observe stream (t0: the stream opened; t1: the message came;
  // rev: the revision it names; gen, lease and value: its exclusive holder's, when it names one)
  /** The stream a message came on, unique in a run: its revisions must strictly increase. */
  stream?: string;
  /** The message said the resource is held (by shared holders when it names no exclusive one). */
  held?: boolean;
  // renew
  /** Renew, one KeepAlive message for this lease, or one for several (lease_ids). */
  renewVia?: "renew" | "keepalive" | "keepalive-batch";
  /** The holder label sent with Acquire, unique per acquisition: the owner key's value names it. */
  holder?: string;
  // the token used (writes, renew, release) or granted (acquire)
  gen?: string;
  lease?: string;
  // writes
  mode?: "order" | "live";
  idem?: string;
  /** One write and its retries share this id; their requests are identical. */
  write?: string;
  attempt?: number;
  /** What the write does, key by key: a value to put, or null to delete. Put values are unique in a run. */
  effects?: [string, string | null][];
  /** Sent in an explicit FencedStoreService.Batch with other writes (its first attempt; retries go alone). */
  batch?: boolean;
  /** Sent through the SDK at once with others, which its writer coalesces into Batch calls. */
  coalesced?: boolean;
  /** Where it committed (ok writes). */
  rev?: string;
  replayed?: boolean;
}

export function parseOp(line: string): Op | undefined {
  try {
    const v = JSON.parse(line) as Op;
    return typeof v.kind === "string" && typeof v.client === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The principal a call was made as: its client's own name unless it says otherwise. */
export const principalOf = (op: Op) => op.principal ?? op.client;

export const isWrite = (op: Op) => op.kind === "put" || op.kind === "delete" || op.kind === "txn";

/** The reason of an AcquireAll's line for a resource given back because another of the call was refused (Op.all). */
export const WITH_ANOTHER = "WITH_ANOTHER";
