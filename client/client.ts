// The fencekeeper client: acquires leases and keeps them on one KeepAlive stream, runs work under a lease,
// and gives the store's calls with an explicit token. Any of several server URLs may serve any call.
// Acquisitions go on sessions (one per TTL, opened on first use and shared) unless the client or the
// acquisition asks for a lease of its own (ClientOptions.sessions false, AcquireOptions.ownLease).
// Concurrent acquisitions and releases go to the server together (lock-batcher.ts).
import { hostname } from "node:os";
import { Code, type Interceptor } from "@connectrpc/connect";
import { timestampDate, type Duration, type Timestamp } from "@bufbuild/protobuf/wkt";
import { DEFAULT_BACKOFF, type BackoffOptions } from "./backoff.js";
import { Calls } from "./calls.js";
import { now, type Instant } from "./clock.js";
import { defaultDriftMs } from "./deadline.js";
import { toDuration, toMs } from "./duration.js";
import { toFencekeeperError } from "./error-mapping.js";
import { CanceledError, FencekeeperError, InvalidArgumentError, LeaseNotFoundError, UnavailableError, type LeaseLostError } from "./errors.js";
import type { ClientEvent, Emitter, EventSink } from "./events.js";
import { KeepAlive } from "./keepalive.js";
import { OwnLease, Session, type KeeperContext } from "./keeper.js";
import { Lease, type LeaseContext } from "./lease.js";
import type { TokenKey } from "./verify-token.js";
import { Servers, type Credentials, type Connection } from "./servers.js";
import { Store, type FenceModeName, type Value } from "./store.js";
import type { AcquireAllOptions, AcquireOptions, Description, Holder, Ownership } from "./acquire-options.js";
import { campaign, lead, leader, observeLeaders, type CampaignOptions, type Leader, type LeaderChange, type LeadCallbacks, type LeadOptions, type Leadership } from "./election.js";
import { WriteBatcher } from "./write-batcher.js";
import { LockBatcher, type AcquireInit } from "./lock-batcher.js";
import { tokenFromProto, tokenToProto, type Token } from "./token.js";
import { AcquireMode } from "../gen/ts/fencekeeper/v1/token_pb.js";
import type { Holder as ProtoHolder } from "../gen/ts/fencekeeper/v1/lease_pb.js";

export const DEFAULT_URL = "http://127.0.0.1:50051";
/**
 * Release and CloseSession calls in flight at most; more wait their turn. A lease's signal aborts when
 * it is released, whatever its call waits for: this only keeps close() with thousands of leases from
 * sending thousands of calls at once.
 */
const CLEANUPS_IN_FLIGHT = 64;
export const DEFAULT_TTL_MS = 10_000;

export interface ClientOptions {
  /** Server base URLs, replicas of one service. Default: FENCEKEEPER_URL (comma-separated), else DEFAULT_URL. */
  servers?: string | readonly string[];
  /** The holder label sent with Acquire. Default: "<hostname>:<pid>". */
  holder?: string;
  /** Subtracted from every lease deadline, in ms. Default: 100 ms + 1% of the TTL. */
  driftMarginMs?: number;
  /** The deadline of calls that do not wait, in ms. Default 15000. */
  callTimeoutMs?: number;
  /** The fence mode of writes through a lease, unless a call says otherwise. Default "live". */
  fenceMode?: FenceModeName;
  /** Reconnection backoff of the KeepAlive stream. */
  backoff?: Partial<BackoffOptions>;
  /**
   * Put acquisitions on sessions: one per TTL, opened on first use, shared by every acquisition of that
   * TTL, renewed with one renewal for all of them, closed by close(). Default true, as etcd's Mutex,
   * Curator and Chubby lock on a session. false: each acquisition has an etcd lease of its own (as
   * AcquireOptions.ownLease asks for one). See docs/client.md, "Sessions", for when to choose which.
   */
  sessions?: boolean;
  /**
   * Coalesce concurrent acquisitions and releases into LeaseService.LeaseBatch calls: one that finds no
   * call in flight goes out at once as a plain Acquire or Release; those that arrive meanwhile go
   * together in the next call, each with its own answer. An acquisition that waits in line is never held
   * up by the others. Falls back to one call each against a server without LeaseBatch. Default true.
   */
  coalesceLocks?: boolean;
  /** Credentials for a server with authentication on (docs/authentication.md). */
  credentials?: Credentials;
  /**
   * Coalesce concurrent puts and deletes into FencedStoreService.Batch calls: a write that finds no call
   * in flight goes out at once as a plain Put or Delete; those that arrive meanwhile go together in the
   * next call. Each keeps its own answer and error. No timer, so a lone write waits for nothing. Falls
   * back to one call per write against a server without Batch. Default true.
   */
  coalesceWrites?: boolean;
  /**
   * The library under unary calls: "grpc-js" (default; @grpc/grpc-js, about a third of connect-node's
   * client CPU per call) or "connect" (connect-node). Streams always go through connect-node.
   */
  transport?: "grpc-js" | "connect";
  /** Interceptors of every call and stream the client makes (after its own: trace context, bearer), for metrics or logs. */
  interceptors?: readonly Interceptor[];
  onEvent?: EventSink;
}

export type { AcquireAllOptions, AcquireOptions, Description, Holder, Ownership } from "./acquire-options.js";

/** A lease of its own as granted: the TTL etcd granted, in ms, and when the grant was sent and answered. */
interface Grant {
  token: Token;
  ttlMs: number;
  sentAt: Instant;
  answeredAt: Instant;
}

export class FencekeeperClient {
  /** The fenced store with explicit tokens; writes through a Lease attach its token themselves. */
  readonly store: Store;
  readonly #servers: Servers;
  readonly #calls: Calls;
  readonly #keepAlive: KeepAlive;
  readonly #holder: string;
  readonly #leases = new Set<Lease>();
  readonly #ctx: LeaseContext;
  readonly #keepers: KeeperContext;
  readonly #sessions?: Map<number, Promise<Session>>;
  readonly #locks?: LockBatcher;
  #closed = false;
  #cleanups = 0;
  /** Cleanups waiting for a turn, from #turnsHead on. */
  #turns: (() => void)[] = [];
  #turnsHead = 0;

  constructor(o: ClientOptions = {}) {
    const urls = o.servers ?? (process.env.FENCEKEEPER_URL || DEFAULT_URL);
    const list = typeof urls === "string" ? urls.split(",").map((u) => u.trim()).filter(Boolean) : urls;
    this.#servers = new Servers(list, o.credentials, o.interceptors, o.transport);
    this.#calls = new Calls(this.#servers, o.callTimeoutMs ?? 15_000);
    this.store = new Store(this.#calls, o.coalesceWrites === false ? undefined : new WriteBatcher(this.#calls));
    const sink = o.onEvent;
    const emit: Emitter = Object.assign(
      (e: ClientEvent) => {
        try {
          sink?.(e);
        } catch (err) {
          // A failing listener must not stop the keeping of leases; its error surfaces on its own.
          queueMicrotask(() => {
            throw err;
          });
        }
      },
      { listening: sink !== undefined },
    );
    this.#keepAlive = new KeepAlive(this.#servers, { ...DEFAULT_BACKOFF, ...o.backoff }, emit);
    this.#holder = o.holder ?? `${hostname()}:${process.pid}`;
    this.#ctx = {
      store: this.store,
      emit,
      fenceMode: o.fenceMode ?? "live",
      ended: (lease) => this.#leases.delete(lease),
      // Repeatable: the same value set twice is the same outcome.
      proclaim: async (token, value) =>
        (await this.#calls.run((c) => c.lease.proclaim({ token: tokenToProto(token), value }, { timeoutMs: this.#calls.timeoutMs }), true)).revision,
    };
    this.#keepers = {
      keepAlive: this.#keepAlive,
      emit,
      driftMs: o.driftMarginMs !== undefined ? () => o.driftMarginMs! : defaultDriftMs,
      release: (token) => this.#release(token),
      closeSession: (id) => this.#closeSession(id),
    };
    if (o.sessions !== false) this.#sessions = new Map();
    if (o.coalesceLocks !== false) this.#locks = new LockBatcher(this.#calls);
  }

  /** Whether this client puts its acquisitions on sessions (ClientOptions.sessions, true by default). */
  get sessions(): boolean {
    return this.#sessions !== undefined;
  }

  /** Acquires a resource and keeps its lease alive until it is released or lost. */
  async acquire(resource: string, o: AcquireOptions = {}): Promise<Lease> {
    return (this.#onSession(o) && (await this.#acquireOnSession(resource, o))) || this.#acquireOwn(resource, o);
  }

  /**
   * Whether an acquisition goes on the session. A lock-delay and a preemption need a lease of their own
   * (the server refuses them on a session): on a session, acquisitions end with the session.
   */
  #onSession(o: { ownLease?: boolean; lockDelay?: number; preempt?: boolean }): boolean {
    return this.#sessions !== undefined && !o.ownLease && !o.lockDelay && !o.preempt;
  }

  /** One Acquire call, coalesced with the client's others unless ClientOptions.coalesceLocks is false. */
  #acquireCall(req: AcquireInit, o: { signal?: AbortSignal; timeoutMs: number }) {
    const locks = this.#locks;
    if (locks) return locks.acquire(req, o);
    return this.#calls.run((c) => c.lease.acquire(req, o), false);
  }

  /** An acquisition on an etcd lease of its own. */
  async #acquireOwn(resource: string, o: AcquireOptions): Promise<Lease> {
    const ttlMs = o.ttl ?? DEFAULT_TTL_MS;
    const wait = o.wait !== undefined && o.wait !== false;
    // Whole ms: a call's deadline goes out as a grpc-timeout header, which takes no fractions.
    const waitMs = typeof o.wait === "number" ? Math.ceil(o.wait) : undefined;
    const timeoutMs = o.wait === true ? 0 : this.#calls.timeoutMs + (waitMs ?? 0);
    const sentAt = now();
    const res = await this.#acquireCall(
      {
        resource,
        ttl: toDuration(ttlMs),
        holder: o.holder ?? this.#holder,
        wait,
        waitTimeout: waitMs !== undefined ? toDuration(waitMs) : undefined,
        lockDelay: o.lockDelay ? toDuration(o.lockDelay) : undefined,
        mode: modeOf(o),
        value: valueOf(o),
        maxHolders: o.maxHolders ?? 0,
        preempt: o.preempt ?? false,
      },
      { signal: o.signal, timeoutMs },
    );
    if (!res.token || !res.ttl) throw new FencekeeperError("the server granted a lease without a token or a TTL", Code.Internal);
    let grant: Grant = { token: tokenFromProto(res.token), ttlMs: toMs(res.ttl), sentAt, answeredAt: now() };
    // The deadline counts from the Acquire's send, and a wait in line uses it up: the TTL started when
    // the lease was granted, at some unknown point before the answer. Then count from a renewal instead.
    if (grant.answeredAt.mono - sentAt.mono > grant.ttlMs / 3) grant = await this.#confirm(grant);
    if (o.signal?.aborted) {
      await this.#release(grant.token);
      throw new CanceledError(`acquire of "${resource}" was canceled`, Code.Canceled);
    }
    const keeper = new OwnLease(grant.token.leaseId, grant.ttlMs, grant.sentAt, grant.answeredAt, this.#keepers, res.lockDelay !== undefined);
    return this.#held(new Lease(grant.token, keeper, this.#ctx, o.signal), keeper);
  }

  /**
   * An acquisition on the client's session of that TTL (opened if there is none, or if it was lost).
   * Undefined when the session already holds or waits for the resource (ALREADY_ACQUIRED): a session
   * takes a resource once at a time, so that acquisition goes on a lease of its own, as without sessions.
   */
  async #acquireOnSession(resource: string, o: AcquireOptions): Promise<Lease | undefined> {
    const ttlMs = o.ttl ?? DEFAULT_TTL_MS;
    const wait = o.wait !== undefined && o.wait !== false;
    const startedAt = performance.now();
    for (let attempt = 1; ; attempt++) {
      const session = await this.#session(ttlMs);
      // A second attempt (the first one's session was lost) waits only for what is left of the wait.
      const waitMs = typeof o.wait === "number" ? Math.max(0, Math.ceil(o.wait - (performance.now() - startedAt))) : undefined;
      const timeoutMs = o.wait === true ? 0 : this.#calls.timeoutMs + (waitMs ?? 0);
      let res;
      try {
        res = await this.#acquireCall(
          {
            resource,
            holder: o.holder ?? this.#holder,
            wait,
            waitTimeout: waitMs !== undefined ? toDuration(waitMs) : undefined,
            sessionId: session.leaseId,
            mode: modeOf(o),
            value: valueOf(o),
            maxHolders: o.maxHolders ?? 0,
          },
          { signal: o.signal, timeoutMs },
        );
      } catch (err) {
        if (err instanceof FencekeeperError && err.reason === "ALREADY_ACQUIRED") return undefined;
        if (o.signal?.aborted) void this.#releaseUnanswered(resource, session.leaseId);
        if (err instanceof LeaseNotFoundError) {
          // The session is gone (it expired, or was closed, behind the client's back): lost, with its leases.
          session.lose("not-found", err);
          if (attempt === 1) continue;
        }
        throw err;
      }
      if (!res.token) throw new FencekeeperError("the server granted an acquisition without a token", Code.Internal);
      const token = tokenFromProto(res.token);
      if (session.expireIfPassed()) {
        // The session was lost while the Acquire was on its way; the acquisition went with it. The
        // session may still be alive in etcd, holding the grant: its close (Session.lose) must be over
        // before the next attempt, or that attempt finds the resource held by this one.
        await session.close().catch(() => undefined);
        if (attempt === 1) continue;
        throw new UnavailableError(`acquire of "${resource}": its session was lost twice while acquiring; try again`, Code.Unavailable);
      }
      if (o.signal?.aborted) {
        await this.#release(token);
        throw new CanceledError(`acquire of "${resource}" was canceled`, Code.Canceled);
      }
      return this.#held(new Lease(token, session, this.#ctx, o.signal));
    }
  }

  #held(lease: Lease, keeper?: OwnLease): Lease {
    if (!lease.signal.aborted) this.#leases.add(lease);
    keeper?.start();
    return lease;
  }

  /** The open session of this TTL, shared; opened once however many acquisitions ask at the same time. */
  async #session(ttlMs: number): Promise<Session> {
    const sessions = this.#sessions!;
    // etcd grants whole seconds, so TTLs that round up to the same second share a session.
    const key = Math.ceil(ttlMs / 1000);
    for (;;) {
      const opening = sessions.get(key);
      if (!opening) break;
      // An opening that fails fails every acquisition waiting for it (and leaves the map first).
      const session = await opening;
      if (!session.expireIfPassed()) return session;
      // Lost: the next acquisition of this TTL opens a new one.
      if (sessions.get(key) === opening) sessions.delete(key);
    }
    const opening = this.#openSession(ttlMs);
    sessions.set(key, opening);
    opening.catch(() => {
      if (sessions.get(key) === opening) sessions.delete(key);
    });
    return opening;
  }

  async #openSession(ttlMs: number): Promise<Session> {
    if (this.#closed) throw new CanceledError("the client is closed", Code.Canceled);
    const sentAt: Instant = now();
    const res = await this.#calls.run((c) => c.lease.openSession({ ttl: toDuration(ttlMs), holder: this.#holder }, { timeoutMs: this.#calls.timeoutMs }), false);
    if (!res.ttl) throw new FencekeeperError("the server opened a session without a TTL", Code.Internal);
    const session = new Session(res.sessionId, toMs(res.ttl), sentAt, now(), this.#keepers);
    if (this.#closed) {
      await session.close();
      throw new CanceledError("the client is closed", Code.Canceled);
    }
    session.start();
    return session;
  }

  /**
   * Runs fn under a lease on `resource`, with the lease's signal, and releases the lease afterwards, also
   * when fn throws. If the lease is lost before fn returns, this rejects with the LeaseLostError.
   */
  async withLease<T>(resource: string, fn: (lease: Lease, signal: AbortSignal) => Promise<T> | T, o: AcquireOptions = {}): Promise<T> {
    const lease = await this.acquire(resource, o);
    try {
      const result = await fn(lease, lease.signal);
      const signal = lease.signal;
      if (signal.aborted && (signal.reason as LeaseLostError).why !== "released") throw signal.reason;
      return result;
    } finally {
      await lease.release();
    }
  }

  /**
   * A permit of a counting semaphore of n on `resource` (docs/semaphores.md): waits in line, first come
   * first served, until fewer than n hold it (AcquireOptions.wait bounds the wait; default: wait as long
   * as it takes), and keeps the permit's lease alive until it is released. The lease's signal is aborted
   * when the permit is lost, decided from the send time of the last renewal, as for any lease. Its token
   * is a shared token: it reads, and the fenced store refuses its writes.
   */
  async semaphore(resource: string, n: number, o: Omit<AcquireOptions, "maxHolders" | "shared"> = {}): Promise<Lease> {
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`a semaphore needs at least 1 permit, got ${n}`, Code.InvalidArgument);
    return this.acquire(resource, { wait: true, ...o, maxHolders: n });
  }

  /**
   * Acquires every resource or none (Curator's InterProcessMultiLock), in one AcquireAll call: the
   * server takes them exclusively in the order of their names' bytes, so that two callers asking for
   * overlapping sets cannot deadlock, and gives back what it took when one fails. wait bounds the wait
   * for the whole set, as for acquire(). Resolves with one Lease per resource, in the order given, each
   * kept and released on its own; on the client's session unless o.ownLease (or the client's sessions
   * are off).
   */
  async acquireAll(resources: readonly string[], o: AcquireAllOptions = {}): Promise<Lease[]> {
    return (this.#onSession(o) && (await this.#acquireAllOnSession(resources, o))) || this.#acquireAllOwn(resources, o);
  }

  /** AcquireAll on leases of their own, one each. */
  async #acquireAllOwn(resources: readonly string[], o: AcquireAllOptions): Promise<Lease[]> {
    const { wait, waitMs, timeoutMs } = this.#waitOf(o.wait);
    const sentAt = now();
    const res = await this.#calls.run(
      (c) =>
        c.lease.acquireAll(
          {
            resources: [...resources],
            ttl: toDuration(o.ttl ?? DEFAULT_TTL_MS),
            holder: o.holder ?? this.#holder,
            wait,
            waitTimeout: waitMs !== undefined ? toDuration(waitMs) : undefined,
          },
          { signal: o.signal, timeoutMs },
        ),
      false,
    );
    const answeredAt = now();
    let grants: Grant[] = res.acquisitions.map((a) => {
      if (!a.token || !a.ttl) throw new FencekeeperError("the server granted a lease without a token or a TTL", Code.Internal);
      return { token: tokenFromProto(a.token), ttlMs: toMs(a.ttl), sentAt, answeredAt };
    });
    // As for one acquisition: after a long wait, the deadlines count from a renewal sent now.
    if (grants.some((g) => answeredAt.mono - sentAt.mono > g.ttlMs / 3)) {
      const confirmed = await Promise.allSettled(grants.map((g) => this.#confirm(g)));
      const failed = confirmed.find((c) => c.status === "rejected");
      if (failed) {
        await Promise.all(confirmed.map((c) => (c.status === "fulfilled" ? this.#release(c.value.token) : undefined)));
        throw failed.reason;
      }
      grants = confirmed.map((c) => (c as PromiseFulfilledResult<Grant>).value);
    }
    if (o.signal?.aborted) {
      await Promise.all(grants.map((g) => this.#release(g.token)));
      throw new CanceledError(`acquire of ${resources.length} resources was canceled`, Code.Canceled);
    }
    return grants.map((g) => {
      const keeper = new OwnLease(g.token.leaseId, g.ttlMs, g.sentAt, g.answeredAt, this.#keepers, false);
      return this.#held(new Lease(g.token, keeper, this.#ctx, o.signal), keeper);
    });
  }

  /** AcquireAll on the client's session of that TTL; undefined when the session holds one of them already. */
  async #acquireAllOnSession(resources: readonly string[], o: AcquireAllOptions): Promise<Lease[] | undefined> {
    const startedAt = performance.now();
    for (let attempt = 1; ; attempt++) {
      const session = await this.#session(o.ttl ?? DEFAULT_TTL_MS);
      const { wait, waitMs, timeoutMs } = this.#waitOf(typeof o.wait === "number" ? Math.max(0, o.wait - (performance.now() - startedAt)) : o.wait);
      let res;
      try {
        res = await this.#calls.run(
          (c) =>
            c.lease.acquireAll(
              {
                resources: [...resources],
                holder: o.holder ?? this.#holder,
                wait,
                waitTimeout: waitMs !== undefined ? toDuration(waitMs) : undefined,
                sessionId: session.leaseId,
              },
              { signal: o.signal, timeoutMs },
            ),
          false,
        );
      } catch (err) {
        if (err instanceof FencekeeperError && err.reason === "ALREADY_ACQUIRED") return undefined;
        if (o.signal?.aborted) for (const r of resources) void this.#releaseUnanswered(r, session.leaseId);
        if (err instanceof LeaseNotFoundError) {
          session.lose("not-found", err);
          if (attempt === 1) continue;
        }
        throw err;
      }
      const tokens = res.acquisitions.map((a) => {
        if (!a.token) throw new FencekeeperError("the server granted an acquisition without a token", Code.Internal);
        return tokenFromProto(a.token);
      });
      if (session.expireIfPassed()) {
        if (attempt === 1) continue;
        throw new UnavailableError(`acquire of ${resources.length} resources: their session was lost twice while acquiring; try again`, Code.Unavailable);
      }
      if (o.signal?.aborted) {
        await Promise.all(tokens.map((t) => this.#release(t)));
        throw new CanceledError(`acquire of ${resources.length} resources was canceled`, Code.Canceled);
      }
      return tokens.map((t) => this.#held(new Lease(t, session, this.#ctx, o.signal)));
    }
  }

  /** An AcquireOptions.wait as the request's wait and wait_timeout, and the call's deadline. */
  #waitOf(w: boolean | number | undefined): { wait: boolean; waitMs?: number; timeoutMs: number } {
    const waitMs = typeof w === "number" ? Math.ceil(w) : undefined;
    return { wait: w !== undefined && w !== false, waitMs, timeoutMs: w === true ? 0 : this.#calls.timeoutMs + (waitMs ?? 0) };
  }

  /** The server's public keys that verify tokens offline (verifyToken), the signing one first. */
  async tokenKeys(o: { signal?: AbortSignal } = {}): Promise<TokenKey[]> {
    const res = await this.#calls.run((c) => c.lease.listTokenKeys({}, { signal: o.signal, timeoutMs: this.#calls.timeoutMs }), true);
    return res.keys.map((k) => ({ keyId: k.keyId, publicKey: k.publicKey }));
  }

  /** Who holds a resource, with which token, for how much longer, and how many wait. */
  async describe(resource: string, o: { signal?: AbortSignal } = {}): Promise<Description> {
    const d = await this.#calls.run((c) => c.lease.describe({ resource }, { signal: o.signal, timeoutMs: this.#calls.timeoutMs }), true);
    return {
      held: d.held,
      holder: d.token ? d.holder : undefined,
      token: d.token && tokenFromProto(d.token),
      ...(d.token ? { value: d.value } : {}),
      ttlMs: d.ttl && toMs(d.ttl),
      holders: d.holders.map(holderFromProto),
      maxHolders: d.maxHolders,
      waiters: d.waiters,
      fence: d.fence,
      lastIssued: d.lastIssued,
      ...lockDelayOf(d),
    };
  }

  /** The ownership of a resource now, then each change of holder, until the signal aborts. */
  async *observe(resource: string, o: { signal?: AbortSignal } = {}): AsyncGenerator<Ownership> {
    try {
      for await (const x of this.#servers.connection("calls").lease.observe({ resource }, { signal: o.signal, timeoutMs: 0 })) {
        yield {
          held: x.held,
          holder: x.token ? x.holder : undefined,
          token: x.token && tokenFromProto(x.token),
          ...(x.token ? { value: x.value } : {}),
          holders: x.holders.map(holderFromProto),
          joined: x.joined.map(holderFromProto),
          left: x.left.map(holderFromProto),
          maxHolders: x.maxHolders,
          revision: x.revision,
          ...lockDelayOf(x),
          ...(x.missedChanges ? { missedChanges: true } : {}),
        };
      }
    } catch (err) {
      if (o.signal?.aborted) return;
      throw toFencekeeperError(err);
    }
  }

  /**
   * Campaigns to lead resource (docs/election.md): waits in line, exclusively, and resolves once elected,
   * with the leadership (its token, its loss signal, proclaim(), resign()). value: what followers see of
   * this leader (its address, say).
   */
  campaign(resource: string, value: Value, o: CampaignOptions = {}): Promise<Leadership> {
    return campaign(this, resource, value, o);
  }

  /** The current leader of resource (its holder label, token and value), or undefined when nobody leads. */
  leader(resource: string, o: { signal?: AbortSignal } = {}): Promise<Leader | undefined> {
    return leader(this, resource, o);
  }

  /** The leader of resource now, then each change of leader or of its value, in order, until the signal aborts. */
  observeLeaders(resource: string, o: { signal?: AbortSignal } = {}): AsyncGenerator<LeaderChange> {
    return observeLeaders(this, resource, o);
  }

  /**
   * Leads resource whenever elected, in client-go's style, until o.signal aborts: onElected(signal, token)
   * runs while this process leads, its signal aborted before anyone else can be elected; after a loss,
   * onDeposed, then a new campaign. Never two onElected at once in one process for one resource.
   */
  lead(resource: string, callbacks: LeadCallbacks, o: LeadOptions = {}): Promise<void> {
    return lead(this, resource, callbacks, o);
  }

  /** Releases every lease still held and closes every session, then closes the connections. */
  async close(): Promise<void> {
    this.#closed = true;
    const sessions = await Promise.all([...(this.#sessions?.values() ?? [])].map((s) => s.catch(() => undefined)));
    this.#sessions?.clear();
    // A session's leases end with it, in one CloseSession; what is left has leases of its own.
    const closing = sessions.map((s) => s?.close());
    await Promise.all([...closing, ...[...this.#leases].map((l) => l.release())]);
    this.#keepAlive.close();
    this.#servers.close();
  }

  /** A fresh grant from a Renew of the lease, sent now; the lease is released if that fails. */
  async #confirm(grant: Grant): Promise<Grant> {
    const sentAt = now();
    try {
      const res = await this.#calls.run((c) => c.lease.renew({ leaseId: grant.token.leaseId }, { timeoutMs: this.#calls.timeoutMs }), true);
      return { token: grant.token, ttlMs: toMs(res.ttl!), sentAt, answeredAt: now() };
    } catch (err) {
      await this.#release(grant.token);
      throw err;
    }
  }

  #closeSession(sessionId: bigint): Promise<void> {
    // Gone already, or no server answers: with renewals stopped, the session ends at its TTL either way.
    return this.#cleanup((c) => c.lease.closeSession({ sessionId }, { timeoutMs: this.#calls.timeoutMs }));
  }

  /**
   * An Acquire on a session, cancelled before its answer came: the server may have granted it, with the
   * answer on its way. A session holds a resource once at a time, so a holding of resource on that session
   * that this client never handed out is that grant: given back, or it would stand as long as the session.
   * Best effort, never throws: if no server answers, it ends with the session.
   */
  async #releaseUnanswered(resource: string, sessionId: bigint): Promise<void> {
    let d: Description;
    try {
      d = await this.describe(resource);
    } catch {
      return;
    }
    const ours = new Set([...this.#leases].map((l) => `${l.token.leaseId}:${l.token.generation}`));
    const tokens = new Map([...d.holders.map((h) => h.token), ...(d.token ? [d.token] : [])].map((t) => [`${t.leaseId}:${t.generation}`, t]));
    for (const [key, token] of tokens) if (token.leaseId === sessionId && !ours.has(key)) await this.#release(token);
  }

  #release(token: Token): Promise<void> {
    // Gone already, or no server answers: with renewals stopped, the lease ends at its TTL either way.
    const locks = this.#locks;
    if (locks) return locks.release(tokenToProto(token), this.#calls.timeoutMs).catch(() => undefined);
    return this.#cleanup((c) => c.lease.release({ token: tokenToProto(token) }, { timeoutMs: this.#calls.timeoutMs }));
  }

  /** Runs a call that gives something up on the server, at most CLEANUPS_IN_FLIGHT at a time; never throws. */
  async #cleanup(call: (c: Connection) => Promise<unknown>): Promise<void> {
    if (this.#cleanups < CLEANUPS_IN_FLIGHT) this.#cleanups++;
    else await new Promise<void>((resolve) => this.#turns.push(resolve)); // a finishing call hands its turn over
    try {
      await this.#calls.run(call, true);
    } catch {
      // See the callers.
    } finally {
      const next = this.#turns[this.#turnsHead];
      if (next) {
        this.#turns[this.#turnsHead++] = undefined as never;
        // Drop the taken turns once they are most of the array, so that a steady backlog does not grow it.
        if (this.#turnsHead > 1024 && this.#turnsHead * 2 > this.#turns.length) {
          this.#turns = this.#turns.slice(this.#turnsHead);
          this.#turnsHead = 0;
        }
        next();
      } else {
        this.#cleanups--;
      }
    }
  }
}

/** The lock-delay fields of a DescribeResponse or ObserveResponse, only when set. */
function lockDelayOf(x: { lockDelay?: Duration; lockDelayUntil?: Timestamp }): { lockDelay?: number; lockDelayUntil?: Date } {
  return {
    ...(x.lockDelay ? { lockDelay: toMs(x.lockDelay) } : {}),
    ...(x.lockDelayUntil ? { lockDelayUntil: timestampDate(x.lockDelayUntil) } : {}),
  };
}

function modeOf(o: AcquireOptions): AcquireMode {
  return o.shared || o.maxHolders ? AcquireMode.SHARED : AcquireMode.UNSPECIFIED;
}

function holderFromProto(h: ProtoHolder): Holder {
  return { holder: h.holder, token: tokenFromProto(h.token!), ...(h.ttl ? { ttlMs: toMs(h.ttl) } : {}), value: h.value };
}

function valueOf(o: AcquireOptions): Uint8Array | undefined {
  return typeof o.value === "string" ? new TextEncoder().encode(o.value) : o.value;
}
