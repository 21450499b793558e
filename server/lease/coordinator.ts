// The lease coordinator: who holds a resource, in which generation, and who waits.
//
// Each acquisition puts a key in the resource's line, attached to a fresh etcd lease. The key with the
// smallest create revision owns the resource, and that create revision is the generation. A waiter
// watches the key just ahead of it, so a release or an expiry hands over in FIFO order. Once a key owns
// the resource, the generation is recorded as issued (the store refuses generations never issued).
import type { IKeyValue, IRangeRequest } from "etcd3";
import { DomainError, leaseNotFound, unavailable } from "../domain/errors.js";
import type { Limits } from "../domain/limits.js";
import type { Token } from "../domain/token.js";
import { checkHolder, checkLeaseId, checkResource, checkToken, ttlSeconds } from "../domain/validate.js";
import type { Committer } from "../etcd/committer.js";
import { decodeGeneration, encodeGeneration, type KeyLayout } from "../etcd/keys.js";
import type { Leases } from "../etcd/leases.js";
import { cmp, op } from "../etcd/ops.js";
import { prefixRange, type Reader } from "../etcd/reader.js";
import { AsyncQueue } from "../util/async-queue.js";

export interface AcquireParams {
  resource: string;
  ttlMs: number | undefined;
  holder: string;
  wait: boolean;
  /** When to give up waiting (ms since the epoch); undefined: only the signal ends the wait. */
  waitUntil?: number;
}

export interface Grant {
  token: Token;
  ttlSeconds: number;
}

export interface Ownership {
  held: boolean;
  holder?: string;
  token?: Token;
  revision: bigint;
}

export interface Description {
  held: boolean;
  holder?: string;
  token?: Token;
  ttlSeconds?: number;
  waiters: number;
  fence: bigint;
  lastIssued: bigint;
}

export interface CoordinatorDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
  leases: Leases;
  limits: Limits;
}

interface LineEntry {
  key: Buffer;
  generation: bigint;
  leaseId: bigint;
  holder: string;
}

export class LeaseCoordinator {
  constructor(private readonly d: CoordinatorDeps) {}

  async acquire(p: AcquireParams, signal: AbortSignal): Promise<Grant> {
    checkResource(p.resource);
    checkHolder(p.holder);
    const ttl = ttlSeconds(p.ttlMs, this.d.limits);
    const { keys, committer, leases } = this.d;

    const lease = await leases.grant(ttl);
    const lineKey = keys.queueKey(p.resource, lease.id);
    try {
      // Join the line and read it back in the same round trip.
      const linePrefix = keys.queuePrefix(p.resource);
      const queued = await committer.commit("acquire", {
        compare: [cmp.createdAt(lineKey, 0n)],
        success: [op.put(lineKey, Buffer.from(JSON.stringify({ holder: p.holder })), lease.id), op.range(lineRange(linePrefix))],
        failure: [],
      });
      if (!queued.succeeded) throw new Error(`etcd granted lease ${lease.id} twice`);
      const generation = BigInt(queued.header.revision);

      const waited = await this.waitForTurn(p, lineKey, lease, signal, { kvs: queued.responses[1].response_range.kvs, revision: generation });

      // Record the generation as issued, and give the resource a fence if it has none, while this key
      // still owns the resource. No later owner can exist while it does, so issued only grows.
      const fenceKey = keys.fenceKey(p.resource);
      const issued = await committer.commit("record generation", {
        compare: [cmp.createdAt(lineKey, generation)],
        success: [
          op.put(keys.issuedKey(p.resource), encodeGeneration(generation)),
          op.txn({ compare: [cmp.createdAt(fenceKey, 0n)], success: [op.put(fenceKey, encodeGeneration(0n))], failure: [] }),
        ],
        failure: [],
      });
      if (!issued.succeeded) throw placeLost(p.resource, lease.id);

      // After a wait, start the holder's TTL now rather than when it joined the line; without one, the
      // TTL etcd reported at the grant is fresh.
      const ttlLeft = waited ? await leases.renew(lease.id) : lease.ttlSeconds;
      if (ttlLeft <= 0) throw placeLost(p.resource, lease.id);
      return { token: { resource: p.resource, generation, leaseId: lease.id }, ttlSeconds: ttlLeft };
    } catch (err) {
      // A waiter that gives up leaves nothing behind: revoking the lease deletes its key. If etcd is
      // unreachable, the key goes when the lease's TTL runs out.
      await leases.revoke(lease.id).catch(() => undefined);
      throw err;
    }
  }

  async renew(leaseId: bigint): Promise<number> {
    checkLeaseId(leaseId);
    const ttl = await this.d.leases.renew(leaseId);
    if (ttl <= 0) throw leaseNotFound(leaseId);
    return ttl;
  }

  async release(token: Token | undefined): Promise<void> {
    const t = checkToken(token, "token");
    const lineKey = this.d.keys.queueKey(t.resource, t.leaseId);
    const res = await this.d.committer.commit("release", {
      compare: [cmp.createdAt(lineKey, t.generation)],
      success: [op.del(lineKey)],
      failure: [],
    });
    if (!res.succeeded) {
      throw new DomainError(
        "not_found",
        `generation ${t.generation} of "${t.resource}" (lease ${t.leaseId}) is not held: it expired, was released, or never existed`,
        "LEASE_NOT_FOUND",
        { lease_id: String(t.leaseId), resource: t.resource, generation: String(t.generation) },
      );
    }
    await this.d.leases.revoke(t.leaseId).catch(() => undefined);
  }

  async describe(resource: string): Promise<Description> {
    checkResource(resource);
    const { keys, reader, leases } = this.d;
    const snap = await reader.snapshot("describe", [
      lineRange(keys.queuePrefix(resource)),
      { key: keys.fenceKey(resource) },
      { key: keys.issuedKey(resource) },
    ]);
    const [line, fence, issued] = snap.ranges;
    const owner = line.kvs[0] ? lineEntry(resource, line.kvs[0]) : undefined;
    const description: Description = {
      held: owner !== undefined,
      waiters: Math.max(0, line.kvs.length - 1),
      fence: decodeGeneration(fence.kvs[0]?.value),
      lastIssued: decodeGeneration(issued.kvs[0]?.value),
    };
    if (owner) {
      description.holder = owner.holder;
      description.token = tokenOf(resource, owner);
      description.ttlSeconds = Math.max(0, await leases.timeToLive(owner.leaseId));
    }
    return description;
  }

  /** The ownership of a resource now, then each change, until the signal aborts. */
  async *observe(resource: string, signal: AbortSignal): AsyncGenerator<Ownership> {
    checkResource(resource);
    const { keys, reader } = this.d;
    const linePrefix = keys.queuePrefix(resource);
    const ownerAt = async (revision?: bigint) => {
      const res = await reader.range("observe", {
        ...lineRange(linePrefix),
        limit: 1,
        ...(revision !== undefined ? { revision: revision.toString() } : {}),
      });
      return { revision: BigInt(res.header.revision), owner: res.kvs[0] ? lineEntry(resource, res.kvs[0]) : undefined };
    };

    const start = await ownerAt();
    let owner = start.owner;
    yield ownership(resource, owner, start.revision);

    const changes = new AsyncQueue<{ revision: bigint; events: { deleted: boolean; key: Buffer }[] }>();
    const watcher = await reader.watchPrefix(linePrefix, start.revision + 1n);
    watcher.on("data", (res) => {
      const events = res.events.map((ev) => ({ deleted: ev.type === "Delete", key: ev.kv.key }));
      changes.push({ revision: BigInt(res.header.revision), events });
    });
    watcher.on("error", (err) => changes.fail(unavailable("watch", err)));
    const stop = () => changes.close();
    signal.addEventListener("abort", stop, { once: true });
    try {
      for await (const change of changes) {
        // Only the owner's key going away, or a key arriving while nobody owns, can change the owner.
        const current = owner;
        const relevant = change.events.some((ev) => (current ? ev.deleted && ev.key.equals(current.key) : !ev.deleted));
        if (!relevant) continue;
        const now = await ownerAt(change.revision);
        if (now.owner?.generation === owner?.generation) continue;
        owner = now.owner;
        yield ownership(resource, owner, change.revision);
      }
    } finally {
      signal.removeEventListener("abort", stop);
      await watcher.cancel().catch(() => undefined);
    }
  }

  /**
   * Returns once lineKey owns the resource, saying whether it had to wait; with wait unset, fails at once
   * if it does not. line is the line as read when the key joined it.
   */
  private async waitForTurn(
    p: AcquireParams,
    lineKey: Buffer,
    lease: { id: bigint; ttlSeconds: number },
    signal: AbortSignal,
    line: { kvs: IKeyValue[]; revision: bigint },
  ): Promise<boolean> {
    const linePrefix = this.d.keys.queuePrefix(p.resource);
    for (let waited = false; ; waited = true) {
      if (waited) {
        const res = await this.d.reader.range("acquire", lineRange(linePrefix));
        line = { kvs: res.kvs, revision: BigInt(res.header.revision) };
      }
      const place = line.kvs.findIndex((kv) => kv.key.equals(lineKey));
      if (place < 0) throw placeLost(p.resource, lease.id);
      if (place === 0) return waited;
      if (!p.wait) {
        const owner = lineEntry(p.resource, line.kvs[0]);
        throw new DomainError(
          "aborted",
          `"${p.resource}" is held by ${owner.holder ? `"${owner.holder}"` : "another holder"} (generation ${owner.generation}); ` +
            "acquire with wait set to queue for it",
          "RESOURCE_HELD",
          { resource: p.resource, holder: owner.holder, generation: String(owner.generation), lease_id: String(owner.leaseId) },
          tokenOf(p.resource, owner),
        );
      }
      await this.waitForDeletion(p, line.kvs[place - 1].key, line.revision, lease, signal);
    }
  }

  /**
   * Waits until key is deleted, renewing the waiter's own lease meanwhile: the open Acquire call is the
   * client asking to keep its place.
   */
  private async waitForDeletion(
    p: AcquireParams,
    key: Buffer,
    seenAt: bigint,
    lease: { id: bigint; ttlSeconds: number },
    signal: AbortSignal,
  ): Promise<void> {
    const watcher = await this.d.reader.watchKey(key, seenAt + 1n);
    const timers: NodeJS.Timeout[] = [];
    let onAbort: (() => void) | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        watcher.on("delete", () => resolve());
        watcher.on("error", (err) => reject(unavailable("watch", err)));
        if (signal.aborted) return reject(cancelled(p.resource));
        onAbort = () => reject(cancelled(p.resource));
        signal.addEventListener("abort", onAbort, { once: true });
        if (p.waitUntil !== undefined) {
          timers.push(setTimeout(() => reject(waitExpired(p.resource)), Math.max(0, p.waitUntil - Date.now())));
        }
        const keepPlace = setInterval(() => {
          this.d.leases.renew(lease.id).then(
            (ttl) => ttl <= 0 && reject(placeLost(p.resource, lease.id)),
            (err) => reject(err),
          );
        }, Math.max(500, (lease.ttlSeconds * 1000) / 3));
        timers.push(keepPlace);
      });
    } finally {
      for (const t of timers) clearTimeout(t);
      if (onAbort) signal.removeEventListener("abort", onAbort);
      await watcher.cancel().catch(() => undefined);
    }
  }
}

/** The whole line of a resource, first come first. */
function lineRange(linePrefix: Buffer): IRangeRequest {
  return prefixRange(linePrefix, { sort_order: "Ascend", sort_target: "Create" });
}

function lineEntry(resource: string, kv: IKeyValue): LineEntry {
  let holder = "";
  try {
    holder = String(JSON.parse(kv.value.toString()).holder ?? "");
  } catch {
    // A key written by something else than fencekeeper: no holder label to show.
  }
  return { key: kv.key, generation: BigInt(kv.create_revision), leaseId: BigInt(kv.lease), holder };
}

function tokenOf(resource: string, e: LineEntry): Token {
  return { resource, generation: e.generation, leaseId: e.leaseId };
}

function ownership(resource: string, owner: LineEntry | undefined, revision: bigint): Ownership {
  return owner ? { held: true, holder: owner.holder, token: tokenOf(resource, owner), revision } : { held: false, revision };
}

const placeLost = (resource: string, leaseId: bigint) =>
  new DomainError("aborted", `the place in line for "${resource}" was lost (lease ${leaseId} expired); acquire again`);
const cancelled = (resource: string) => new DomainError("cancelled", `acquire of "${resource}" was cancelled; the waiter's place was removed`);
const waitExpired = (resource: string) =>
  new DomainError("deadline_exceeded", `gave up waiting for "${resource}" at its deadline; the waiter's place was removed`);
