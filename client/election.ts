// Leader election on top of leases (docs/election.md): a campaign is an exclusive Acquire that waits in
// line and publishes a value; the leader is the exclusive holder; followers observe it. lead() is the loop
// of client-go's leaderelection: campaign, run the elected code with the lease's signal, campaign again
// after a loss. The signal is the lease's, so it aborts at validUntil (the send time of the last confirmed
// renewal + TTL - drift margin), before etcd can expire the lease and grant anyone else.
import { backoffDelay, DEFAULT_BACKOFF } from "./backoff.js";
import { Code } from "@connectrpc/connect";
import { FencekeeperError, InvalidArgumentError, LeaseNotFoundError, TimeoutError, UnavailableError, type LeaseLostError } from "./errors.js";
import type { AcquireOptions, Description, Ownership } from "./acquire-options.js";
import type { Lease } from "./lease.js";
import type { Value } from "./store.js";
import type { Token } from "./token.js";

/** What an election needs of the client (FencekeeperClient is one). */
export interface ElectionClient {
  acquire(resource: string, o?: AcquireOptions): Promise<Lease>;
  describe(resource: string, o?: { signal?: AbortSignal }): Promise<Description>;
  observe(resource: string, o?: { signal?: AbortSignal }): AsyncGenerator<Ownership>;
}

/** The leader of a resource as followers see it. */
export interface Leader {
  /** Its holder label (AcquireOptions.holder, or ClientOptions.holder). */
  holder: string;
  /** Its token: the generation orders leaders, and the fenced store refuses a deposed leader's writes. */
  token: Token;
  /** The value it published (campaign(), proclaim()); empty without one. */
  value: Uint8Array;
}

/** One change seen by observeLeaders(): a new leader, a new value of the same one, or no leader. */
export interface LeaderChange {
  /** Undefined while nobody leads (the resource is free, in a lock-delay, or held by shared holders). */
  leader?: Leader;
  /** The etcd revision at which it took effect (after a reconnection, the revision the stream started at). */
  revision: bigint;
}

export type CampaignOptions = Omit<AcquireOptions, "wait" | "shared" | "value"> & {
  /** How long to wait to be elected, in ms. Default: until elected or the signal aborts. */
  waitMs?: number;
};

/** An elected campaign: the leader's lease, under another name. */
export class Leadership {
  constructor(
    /** The lease behind it: its store calls write under the leader's token. */
    readonly lease: Lease,
  ) {}

  get token(): Token {
    return this.lease.token;
  }

  /** Aborted, with a LeaseLostError, once this process can no longer assume it leads. Stop acting then. */
  get signal(): AbortSignal {
    return this.lease.signal;
  }

  /** Whether it may still assume it leads, by the clock right now. */
  get leading(): boolean {
    return this.lease.held;
  }

  /** Publishes a new value without giving up leadership; refused (and the leadership lost) once deposed. */
  proclaim(value: Value): Promise<bigint> {
    return this.lease.proclaim(value);
  }

  /** Gives leadership up now, so that the next campaigner is elected at once. Idempotent; never throws. */
  resign(): Promise<void> {
    return this.lease.release();
  }
}

/**
 * Waits in line for the resource, exclusively, publishing value: resolves once elected. On a lease of
 * its own unless o.ownLease is false: a leadership must be lost alone, and its leader told at its next
 * renewal when it is released behind its back, which a session's renewal would not tell.
 */
export async function campaign(client: ElectionClient, resource: string, value: Value, o: CampaignOptions = {}): Promise<Leadership> {
  // The type leaves them out; a caller from JavaScript, or through a cast, is told as the other libraries tell it.
  const loose = o as AcquireOptions;
  if (loose.shared || loose.maxHolders || loose.value !== undefined) {
    throw new InvalidArgumentError("a campaign is exclusive and publishes its value argument: the options' shared, maxHolders and value must be unset", Code.InvalidArgument);
  }
  const { waitMs, ...rest } = o;
  return new Leadership(await client.acquire(resource, { ownLease: true, ...rest, value, wait: waitMs ?? true }));
}

/** The current leader, or undefined when nobody holds the resource exclusively. */
export async function leader(client: ElectionClient, resource: string, o: { signal?: AbortSignal } = {}): Promise<Leader | undefined> {
  const d = await client.describe(resource, o);
  return d.token ? { holder: d.holder ?? "", token: d.token, value: d.value ?? new Uint8Array(0) } : undefined;
}

/**
 * The leader now, then each change of leader or of its value, in order, until the signal aborts. A
 * stream the server or the network ends is opened again (with backoff), and starts with the current
 * leader, which is given only if it differs from the last one given.
 */
export async function* observeLeaders(client: ElectionClient, resource: string, o: { signal?: AbortSignal } = {}): AsyncGenerator<LeaderChange> {
  let last: Leader | undefined | null = null; // null: nothing given yet
  for (let failures = 0; !o.signal?.aborted; ) {
    try {
      for await (const x of client.observe(resource, o)) {
        failures = 0;
        const now: Leader | undefined = x.token ? { holder: x.holder ?? "", token: x.token, value: x.value ?? new Uint8Array(0) } : undefined;
        if (last !== null && sameLeader(last, now)) continue;
        last = now;
        yield { ...(now ? { leader: now } : {}), revision: x.revision };
      }
      if (o.signal?.aborted) return;
    } catch (err) {
      if (o.signal?.aborted) return;
      if (!(err instanceof UnavailableError)) throw err;
      failures++;
    }
    // The stream ended (a server draining, a network cut): open it again.
    await sleep(backoffDelay(failures, DEFAULT_BACKOFF), o.signal);
  }
}

function sameLeader(a: Leader | undefined, b: Leader | undefined): boolean {
  if (!a || !b) return a === b;
  return a.token.generation === b.token.generation && a.holder === b.holder && Buffer.from(a.value).equals(Buffer.from(b.value));
}

export interface LeadCallbacks {
  /**
   * Runs while this process leads. `signal` aborts (with a LeaseLostError) before anyone else can be
   * elected: stop acting on it. Leadership lasts until the signal aborts, whether or not this returns
   * earlier; if it throws, leadership is resigned. Never runs twice at once in one process for one
   * resource: the next election's onElected waits for this one to settle.
   */
  onElected(signal: AbortSignal, token: Token, leadership: Leadership): Promise<void> | void;
  /** Leadership ended (lost, resigned, or lead() stopping), after its onElected settled; once per onElected. */
  onDeposed?(error: LeaseLostError): void;
  /** Another leader, or this process, or nobody (undefined), leads now: each change of leader, not of value. */
  onNewLeader?(leader: Leader | undefined): void;
}

export type LeadOptions = Omit<CampaignOptions, "waitMs"> & {
  /** The value to campaign with: given each time, or made afresh for each campaign. */
  value?: Value | (() => Value);
  /** Aborting it stops lead(): a leadership is resigned, and the promise resolves once onElected settled. */
  signal?: AbortSignal;
};

/** The onElected calls running in this process, by resource: the next one waits for the last to settle. */
const terms = new Map<string, Promise<void>>();

/**
 * Campaigns for resource until o.signal aborts: each time elected, runs onElected with the leadership's
 * signal; after a loss, once onElected settled, calls onDeposed and campaigns again. Rejects only for an
 * error that campaigning again cannot mend (bad arguments, permission denied); UNAVAILABLE and a lost
 * campaign are retried with backoff.
 */
export async function lead(client: ElectionClient, resource: string, cb: LeadCallbacks, o: LeadOptions = {}): Promise<void> {
  const { value, signal: stop, ...campaignOptions } = o;
  const watching = new AbortController();
  const onStop = () => watching.abort();
  stop?.addEventListener("abort", onStop, { once: true });
  const followed = cb.onNewLeader ? follow(client, resource, cb.onNewLeader, watching.signal) : Promise.resolve();
  try {
    for (let failures = 0; !stop?.aborted; ) {
      let leadership: Leadership;
      try {
        leadership = await campaign(client, resource, (typeof value === "function" ? value() : value) ?? new Uint8Array(0), { ...campaignOptions, signal: stop });
        failures = 0;
      } catch (err) {
        if (stop?.aborted) return;
        if (!(err instanceof FencekeeperError) || !retryable(err)) throw err;
        await sleep(backoffDelay(++failures, DEFAULT_BACKOFF), stop);
        continue;
      }
      await serve(resource, leadership, cb);
    }
  } finally {
    stop?.removeEventListener("abort", onStop);
    watching.abort();
    await followed;
  }
}

/** One term: onElected (after any earlier term of the resource in this process), then onDeposed once it is over. */
async function serve(resource: string, leadership: Leadership, cb: LeadCallbacks): Promise<void> {
  const before = terms.get(resource) ?? Promise.resolve();
  let served = false;
  const term = before.then(async () => {
    // Lost while the earlier term finished: onElected would start on an aborted signal; skip it.
    if (!leadership.signal.aborted) {
      served = true;
      try {
        await cb.onElected(leadership.signal, leadership.token, leadership);
      } catch {
        // The elected code failed: a leader that no longer does its work should not keep others out.
        await leadership.resign();
      }
    }
    // Leadership lasts until the signal aborts (a loss, or the lease ended by lead() stopping).
    await aborted(leadership.signal);
  });
  terms.set(resource, term);
  try {
    await term;
    // Lost or canceled: wait for the release the loss started, so that lead() resolves with nothing held.
    await leadership.resign();
  } finally {
    if (terms.get(resource) === term) terms.delete(resource);
  }
  // A leadership lost before its onElected could start was never this process's to act on: no onDeposed either.
  if (served) cb.onDeposed?.(leadership.signal.reason as LeaseLostError);
}

/** Calls onNewLeader for each change of leader (not of its value), until the signal aborts. */
async function follow(client: ElectionClient, resource: string, onNewLeader: (l: Leader | undefined) => void, signal: AbortSignal): Promise<void> {
  let last: bigint | undefined | null = null;
  try {
    for await (const c of observeLeaders(client, resource, { signal })) {
      const generation = c.leader?.token.generation;
      if (generation === last) continue;
      last = generation;
      onNewLeader(c.leader);
    }
  } catch {
    // Following is best effort: leading goes on without it.
  }
}

/** A failure campaigning again could mend: the server or etcd briefly away, a deadline, a lease lost while waiting. */
function retryable(err: FencekeeperError): boolean {
  return err instanceof UnavailableError || err instanceof TimeoutError || err instanceof LeaseNotFoundError || err.reason === "LOCK_DELAY";
}

function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
