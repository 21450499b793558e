// The fenced store: a key-value store that refuses writes from stale generations.
//
// Every mutation is one conditional transaction that compares the token with the resource's state,
// applies the writes, raises the fence and records the idempotency key, all or nothing (the comparisons
// are keys.ts's fenceCompares):
//   ORDER: the generation was issued (no fence poisoning), and no newer generation has written
//   LIVE:  ORDER, and the generation still holds the resource at commit time
// When the compares fail, the same transaction reads back what it compared, to say why; the
// idempotency record is among them, so a retry is answered from it whatever the fence says now.
// Mutations of one resource under one token (without idempotency keys) share their compares and their
// fence write, so the committer can commit many of them in one inner transaction.
//
// With --max-bytes-per-resource, a mutation first reads the entries it replaces or deletes (their sizes
// make its change to the resource's stored bytes), and its transaction compares their mod revisions,
// so that the change is exact when it commits; the committer decides the quota in the same transaction
// (committer.ts, UsageChange). Should an entry have changed between the read and the commit, the
// mutation reads again. Bytes counted: each entry's key and value.
import type { IKeyValue, IRangeResponse, IRequestOp } from "etcd3";
import { DomainError, invalid } from "../errors/errors.js";
import { refusalOf, type DomainEvents, type WriteOp } from "../events/events.js";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_TXN_VALUE_BYTES, type Limits } from "../validation/limits.js";
import type { Token } from "../tokens/token.js";
import { checkIdempotencyKey, checkKey, checkPrefix, checkResource, checkToken, checkValue } from "../validation/validate.js";
import type { Committer, Guard, UsageChange } from "../etcd/committer.js";
import type { HoldMember } from "../etcd/hold.js";
import { EtcdLeaseNotFound, EtcdResponseTooLarge } from "../etcd/classify.js";
import {
  decodeGeneration,
  decodeRecord,
  decodeUsage,
  encodeGeneration,
  encodeRecord,
  fenceCompares,
  isHeldBy,
  lastIssuedOf,
  prefixEnd,
  type KeyLayout,
} from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Outcome } from "../etcd/committer.js";
import type { Reader } from "../etcd/reader.js";
import { Reads, reads } from "../etcd/reads.js";
import type { TokenChecks } from "../tokens/checks.js";
import { fingerprintOf, hashKey, type IdempotencyLeases } from "./idempotency.js";
import { callerOver, planPayer, resourceOver, takeOverWrite, writerTag, type PayerPlan, type TakeOver } from "./store-payer.js";
import type { Mutation, StoreOp } from "./mutation.js";
import { decodePageToken, ENTRY_OVERHEAD, encodePageToken, fitting } from "./paging.js";

export type { Mutation, StoreOp } from "./mutation.js";

export interface Commit {
  revision: bigint;
  fence: bigint;
  replayed: boolean;
}

export interface Entry {
  key: string;
  value: Uint8Array;
  modRevision: bigint;
}

export interface Page {
  entries: Entry[];
  nextPageToken: string;
  revision: bigint;
}

export interface StoreDeps {
  keys: KeyLayout;
  tokens: TokenChecks;
  /** Bytes one Range page may take (answers/budget.ts). */
  maxPageBytes: number;
  committer: Committer;
  reader: Reader;
  idempotency: IdempotencyLeases;
  limits: Limits;
  events: DomainEvents;
}

export class FencedStore {
  constructor(private readonly d: StoreDeps) {}

  /** A write of a Batch the policy denied on its own (the others going on): told as the store's own refusals are, with its token's generation. */
  deniedWrite(resource: string, what: WriteOp, generation: bigint | undefined): void {
    this.d.events.emit({ type: "refused", operation: what, resource, reason: "PERMISSION_DENIED", generation });
  }

  /** held: one write of a Batch, whose transactions go to etcd together (etcd/hold.ts). */
  async mutate(m: Mutation, what: WriteOp, held?: HoldMember): Promise<Commit> {
    const token = this.check(m, what);
    try {
      await this.d.tokens.check(token, m.principal);
    } catch (err) {
      // Refused for the token itself (its signature, its principal): as the fence's refusals, a "refused" event.
      const reason = refusalOf(err);
      if (reason) this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason, generation: token.generation });
      throw err;
    }
    if (!m.idempotencyKey) return this.commitMutation(m, token, what, undefined, held);
    // Only a mutation with an idempotency key needs its fingerprint: it hashes every value.
    const record = { key: this.d.keys.idempotencyKey(hashKey(m.idempotencyKey, m.caller)), fingerprint: fingerprintOf(m, token) };
    for (let attempt = 0; ; attempt++) {
      const lease = await this.d.idempotency.leaseForNow();
      try {
        return await this.commitMutation(m, token, what, { ...record, lease }, held);
      } catch (err) {
        // The shared lease of idempotency records is gone (revoked by hand, or etcd lost it): get a new one.
        if (attempt === 0 && err instanceof EtcdLeaseNotFound) {
          await this.d.idempotency.forget(lease);
          continue;
        }
        throw err;
      }
    }
  }

  async get(resource: string, key: string): Promise<{ found: boolean; value: Uint8Array; modRevision: bigint; fence: bigint }> {
    checkResource(resource);
    checkKey(key);
    const { keys, reader } = this.d;
    const { found } = await reader.snapshot("get", reads({ entry: { key: keys.dataKey(resource, key) }, fence: { key: keys.fenceKey(resource) } }));
    const kv = found.entry.kvs[0];
    return {
      found: kv !== undefined,
      value: kv?.value ?? new Uint8Array(),
      modRevision: kv ? BigInt(kv.mod_revision) : 0n,
      fence: decodeGeneration(found.fence.kvs[0]?.value),
    };
  }

  async range(p: { resource: string; prefix: string; pageSize: number; pageToken: string; keysOnly: boolean }): Promise<Page> {
    checkResource(p.resource);
    checkPrefix(p.prefix);
    if (p.pageSize < 0) throw invalid(`page_size must not be negative, got ${p.pageSize}`);
    let size = p.pageSize === 0 ? DEFAULT_PAGE_SIZE : Math.min(p.pageSize, MAX_PAGE_SIZE);
    const cursor = p.pageToken ? decodePageToken(p.pageToken, p.resource, p.prefix) : undefined;
    const { keys, reader } = this.d;
    const all = keys.dataPrefix(p.resource, p.prefix);
    const read = (limit: number) =>
      reader.range("range", {
        key: cursor ? Buffer.concat([keys.dataKey(p.resource, cursor.after), Buffer.from([0])]) : all,
        range_end: prefixEnd(all),
        limit,
        keys_only: p.keysOnly,
        ...(cursor ? { revision: cursor.revision.toString() } : {}),
      });
    for (;;) {
      try {
        const res = await read(size);
        const revision = cursor?.revision ?? BigInt(res.header.revision);
        const kept = fitting(res.kvs.map((kv) => kv.key.length + (p.keysOnly ? 0 : kv.value.length) + ENTRY_OVERHEAD), this.d.maxPageBytes);
        const entries = res.kvs.slice(0, kept).map((kv) => ({
          key: keys.storeKey(p.resource, kv.key),
          value: p.keysOnly ? new Uint8Array() : kv.value,
          modRevision: BigInt(kv.mod_revision),
        }));
        const last = entries[entries.length - 1];
        const more = res.more || kept < res.kvs.length;
        return { entries, revision, nextPageToken: more && last ? encodePageToken({ resource: p.resource, prefix: p.prefix, revision, after: last.key }) : "" };
      } catch (err) {
        // More values than one answer from etcd may carry: read fewer at a time.
        if (err instanceof EtcdResponseTooLarge && size > 1) {
          size = Math.ceil(size / 2);
          continue;
        }
        if (err instanceof DomainError && err.reason === "REVISION_COMPACTED" && cursor) {
          throw new DomainError(err.kind, err.message, err.reason, { revision: String(cursor.revision) });
        }
        throw err;
      }
    }
  }

  async getFence(resource: string): Promise<{ fence: bigint; lastIssued: bigint }> {
    checkResource(resource);
    const { keys, reader } = this.d;
    const { found } = await reader.snapshot("get fence", reads({ fence: { key: keys.fenceKey(resource) }, issued: { key: keys.issuedKey(resource) } }));
    return { fence: decodeGeneration(found.fence.kvs[0]?.value), lastIssued: lastIssuedOf(found.issued.kvs[0]) };
  }

  private check(m: Mutation, what: string): Token {
    checkResource(m.resource);
    const token = checkToken(m.token);
    if (token.resource !== m.resource) {
      throw invalid(`mutation.token is for resource "${token.resource}" but the request writes "${m.resource}"; use the token of the resource you write`);
    }
    // Told by the token alone (its mode is signed): a shared holder shares the resource with others, so
    // a write of its would not be fenced against theirs.
    if (token.mode === "shared") {
      throw new DomainError(
        "invalid_argument",
        `mutation.token is a shared token (generation ${token.generation} of "${token.resource}"): shared holders may read, ` +
          "but writes need the token of an exclusive acquisition; acquire without shared mode to write",
        "SHARED_TOKEN",
        { resource: token.resource, generation: String(token.generation) },
      );
    }
    checkIdempotencyKey(m.idempotencyKey);
    if (m.ops.length === 0) throw invalid(`${what} has no operations; give at least one put or delete`);
    if (m.ops.length > this.d.limits.maxTxnOps) {
      throw invalid(`${what} has ${m.ops.length} operations; at most ${this.d.limits.maxTxnOps} are allowed in one transaction`);
    }
    const seen = new Set<string>();
    let valueBytes = 0;
    m.ops.forEach((o, i) => {
      const where = m.ops.length > 1 ? `ops[${i}].` : "";
      checkKey(o.key, `${where}key`);
      if (seen.has(o.key)) throw invalid(`${where}key "${o.key}" appears twice; each key may appear once in a transaction`);
      seen.add(o.key);
      if (o.kind === "put") {
        checkValue(o.value, `${where}value`);
        valueBytes += o.value.byteLength;
      }
    });
    if (valueBytes > MAX_TXN_VALUE_BYTES) {
      throw invalid(`${what} carries ${valueBytes} bytes of values; at most ${MAX_TXN_VALUE_BYTES} bytes (1 MiB) in all are allowed`);
    }
    return token;
  }

  private async commitMutation(
    m: Mutation,
    token: Token,
    what: WriteOp,
    record?: { key: Buffer; fingerprint: string; lease: bigint },
    held?: HoldMember,
  ): Promise<Commit> {
    const { keys, committer } = this.d;
    const g = token.generation;
    const live = m.mode === "live";
    const issuedKey = keys.issuedKey(m.resource);
    const fenceKey = keys.fenceKey(m.resource);
    const ownerKey = keys.ownerKey(m.resource);

    const compare = fenceCompares(keys, token, live);
    // What the compares judged, read back when they fail, to say why; and the record, to replay it.
    const failure = reads({
      issued: { key: issuedKey },
      fence: { key: fenceKey },
      owner: Reads.maybe(live ? { key: ownerKey } : undefined),
      record: Reads.maybe(record && { key: record.key }),
    });

    const own: IRequestOp[] = m.ops.map((o) =>
      o.kind === "put" ? op.put(keys.dataKey(m.resource, o.key), Buffer.from(o.value)) : op.del(keys.dataKey(m.resource, o.key)),
    );
    if (record) {
      compare.push(cmp.createdAt(record.key, 0n));
      own.push(op.put(record.key, encodeRecord({ fingerprint: record.fingerprint, fence: g }), record.lease));
    }
    // Mutations under one token and mode share a guard; one with an idempotency record has a compare of
    // its own, and so a guard of its own.
    const guard: Guard = {
      key: `${m.resource}\0${g}\0${token.leaseId}\0${m.mode}${record ? `\0${record.key.toString("hex")}` : ""}`,
      compare,
      shared: [op.put(fenceKey, encodeGeneration(g))],
      failure: failure.ops(),
    };
    const limit = BigInt(this.d.limits.maxBytesPerResource);
    const writer = writerTag(BigInt(this.d.limits.maxStoreBytesPerCaller), token.principal);
    for (let attempt = 0; ; attempt++) {
      const usage = limit > 0n ? await this.usageChange(m, writer, limit, attempt === 0) : undefined;
      if (usage && "takeOver" in usage) {
        // Not one of its Batch's group: the others go without waiting for it (they hold keys it writes,
        // so it could not go before them).
        held?.arrived();
        const t = await this.refusedForQuota(m, what, () =>
          takeOverWrite(committer, { ...usage.takeOver, resource: m.resource, principal: token.principal!, writer, limit: BigInt(this.d.limits.maxStoreBytesPerCaller), resourceLimit: limit, guard, own }),
        );
        if (t.moved) continue;
        const commit = this.outcome(m, token, what, live, t.outcome, failure, record?.fingerprint);
        if (commit === undefined) continue;
        return commit;
      }
      const res = await committer.commitGuarded(what, guard, own, usage, held);
      if (res.quota) {
        this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason: "QUOTA_EXCEEDED" });
        if (res.quota.of === "caller") throw callerOver(token.principal!, m.resource, res.quota.usage, res.quota.delta, res.quota.limit);
        throw resourceOver(m.resource, res.quota.usage, res.quota.delta, res.quota.limit);
      }
      // Built for a payer that has changed meanwhile.
      if (res.again) continue;
      const commit = this.outcome(m, token, what, live, res, failure, record?.fingerprint);
      // No cause in what the fence says: an entry the change was computed from changed meanwhile.
      if (commit === undefined && usage) continue;
      if (commit === undefined) {
        throw new Error(`mutation of "${m.resource}" refused without a cause (generation ${g})`);
      }
      return commit;
    }
  }

  /**
   * What a mutation changes in its resource's stored bytes: the entries it writes, as they are now and
   * after. First from what the committer knows, when it knows the resource: an entry it does not know is
   * taken as absent, and the transaction's compares tell if it was not (then it reads, and goes again).
   */
  private async usageChange(m: Mutation, writer: string, limit: bigint, fromKnown: boolean): Promise<UsageChange | { takeOver: TakeOverRead }> {
    const { keys, committer } = this.d;
    const usageKey = keys.usageKey(m.resource);
    const dataKeys = m.ops.map((o) => keys.dataKey(m.resource, o.key));
    const puts = m.ops.some((o) => o.kind === "put");
    // Nothing read (seen at revision 0): the committer's own knowledge is later than it.
    const known = fromKnown ? committer.knownUsage(usageKey) : undefined;
    let plan = known && planPayer(known, writer, puts);
    // A takeover built on what the committer knows, when it knows the usage key and both ledgers: no
    // read. An entry it does not know is taken as absent; the transaction's compares tell if that, or
    // anything else, was not so (and the next attempt reads).
    if (plan?.takeOver && known) {
      const ledger = (tag: string) => ({ key: keys.callerStoreKey(tag), known: committer.knownUsage(keys.callerStoreKey(tag)) });
      const mine = ledger(writer);
      const theirs = known.payer ? ledger(known.payer) : undefined;
      if (mine.known && (!theirs || theirs.known)) {
        const old = dataKeys.map((key) => committer.knownUsage(key) ?? { mod: 0n, bytes: 0n });
        return takeOverOf(m, dataKeys, { key: usageKey, ...known, payer: known.payer ?? "" }, old, { key: mine.key, ...mine.known }, theirs && { key: theirs.key, ...theirs.known! });
      }
    }
    const ledgerKnown = (p: PayerPlan) => !p.takeOver && (!p.ledger || committer.knownUsage(keys.callerStoreKey(p.ledger)) !== undefined);
    let read = plan && ledgerKnown(plan) ? NOTHING_READ : await this.readUsage(usageKey, dataKeys, writer ? keys.callerStoreKey(writer) : undefined);
    const usage = decodeUsage(read.usage);
    if (read !== NOTHING_READ) plan = planPayer(usage, writer, puts);
    // Another payer's ledger, read on its own (the writer's was read): a delete's, or a takeover's.
    const other = plan!.takeOver ? usage.payer : plan!.ledger !== writer ? plan!.ledger : undefined;
    const theirs = other && read !== NOTHING_READ ? (await this.d.reader.range("quota read", { key: keys.callerStoreKey(other) })).kvs[0] : undefined;
    if (plan!.takeOver) {
      const old = m.ops.map((o, i) => {
        const kv = read.entries[i];
        return kv ? { mod: BigInt(kv.mod_revision), bytes: BigInt(Buffer.byteLength(o.key, "utf8")) + BigInt(kv.value.length) } : { mod: 0n, bytes: 0n };
      });
      const ledgerOf = (key: Buffer, kv: IKeyValue | undefined) => ({ key, ...decodeUsage(kv) });
      return takeOverOf(m, dataKeys, { key: usageKey, ...usage }, old, ledgerOf(keys.callerStoreKey(writer), read.ledger), other ? ledgerOf(keys.callerStoreKey(other), theirs) : undefined);
    }
    if (other && read !== NOTHING_READ) read = { ...read, ledger: theirs };
    const seen = read.revision;
    const entries = m.ops.map((o, i) => {
      const old = read.entries[i];
      const keyBytes = BigInt(Buffer.byteLength(o.key, "utf8"));
      return {
        key: dataKeys[i],
        read: old ? { mod: BigInt(old.mod_revision), bytes: keyBytes + BigInt(old.value.length), seen } : { mod: 0n, bytes: 0n, seen },
        after: o.kind === "put" ? keyBytes + BigInt(o.value.byteLength) : 0n,
      };
    });
    const ledger = plan!.ledger;
    const ledgerLimit = BigInt(this.d.limits.maxStoreBytesPerCaller);
    return {
      key: usageKey,
      read: { ...decodeUsage(read.usage), seen },
      limit,
      entries,
      payer: plan!.payer,
      ledger: ledger === undefined ? undefined : { key: keys.callerStoreKey(ledger), read: { ...decodeUsage(read.ledger), seen }, limit: ledgerLimit },
    };
  }

  /** A resource's usage key, the entries a mutation writes, and the writer's ledger, as etcd holds them now. */
  private async readUsage(usageKey: Buffer, dataKeys: Buffer[], ledgerKey: Buffer | undefined): Promise<UsageRead> {
    const { reader } = this.d;
    try {
      const snap = await reader.snapshot(
        "quota read",
        reads({ usage: { key: usageKey }, ledger: Reads.maybe(ledgerKey && { key: ledgerKey }), entries: dataKeys.map((key) => ({ key })) }),
      );
      return { usage: snap.found.usage.kvs[0], ledger: snap.found.ledger?.kvs[0], entries: snap.found.entries.map((r) => r.kvs[0]), revision: snap.revision };
    } catch (err) {
      if (!(err instanceof EtcdResponseTooLarge)) throw err;
      // Entries too large to read at once: one at a time. Not one snapshot, and need not be: the
      // transaction compares each one's revision, the usage key's and the ledger's. Known at the first read's revision.
      const one = (key: Buffer) => reader.range("quota read", { key });
      const first = await one(usageKey);
      const read: UsageRead = { usage: first.kvs[0], entries: [], revision: BigInt(first.header.revision) };
      if (ledgerKey) read.ledger = (await one(ledgerKey)).kvs[0];
      for (const key of dataKeys) read.entries.push((await one(key)).kvs[0]);
      return read;
    }
  }

  /** What a takeover answers, its refusal told as the store's refusals are. */
  private async refusedForQuota<T>(m: Mutation, what: WriteOp, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      if (err instanceof DomainError && err.reason === "QUOTA_EXCEEDED") this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason: "QUOTA_EXCEEDED" });
      throw err;
    }
  }

  /** A committed mutation, the refusal its failed compares say, or undefined when they say none. */
  private outcome(
    m: Mutation,
    token: Token,
    what: WriteOp,
    live: boolean,
    res: Outcome,
    failure: Reads<FailureFound>,
    fingerprint?: string,
  ): Commit | undefined {
    const g = token.generation;
    if (res.succeeded) {
      this.d.events.emit({ type: "written", op: what, resource: m.resource, generation: g, revision: res.revision });
      return { revision: res.revision, fence: g, replayed: false };
    }

    const found = failure.decodeTxn(res.responses);
    const owner = found.owner?.kvs[0];
    const kept = found.record?.kvs[0];
    // A request with the same idempotency key committed first.
    if (kept) return replay(kept, fingerprint!, m.idempotencyKey);
    const lastIssued = lastIssuedOf(found.issued.kvs[0]);
    const currentFence = decodeGeneration(found.fence.kvs[0]?.value);
    const meta = { resource: m.resource, generation: String(g) };
    if (lastIssued < g) {
      this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason: "GENERATION_NOT_ISSUED", generation: g });
      throw new DomainError(
        "failed_precondition",
        `generation ${g} was never issued for "${m.resource}" (the last issued is ${lastIssued}); use a token returned by Acquire`,
        "GENERATION_NOT_ISSUED",
        { ...meta, last_issued: String(lastIssued) },
      );
    }
    if (currentFence > g) {
      this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason: "STALE_TOKEN", generation: g });
      throw new DomainError(
        "failed_precondition",
        `stale token: generation ${g} of "${m.resource}" is older than the fence ${currentFence}, so a newer holder has ` +
          "written; this holder has lost its lease and must stop",
        "STALE_TOKEN",
        { ...meta, fence: String(currentFence) },
      );
    }
    if (live && !isHeldBy(owner, token)) {
      this.d.events.emit({ type: "refused", operation: what, resource: m.resource, reason: "LEASE_NOT_HELD", generation: g });
      throw new DomainError(
        "failed_precondition",
        `lease ${token.leaseId} of generation ${g} of "${m.resource}" is no longer held (it expired or was released); ` +
          "acquire again before writing",
        "LEASE_NOT_HELD",
        { ...meta, lease_id: String(token.leaseId) },
      );
    }
    return undefined;
  }
}

/** What a mutation's transaction reads back when its compares fail (commitMutation). */
interface FailureFound {
  issued: IRangeResponse;
  fence: IRangeResponse;
  /** LIVE only: the owner key. */
  owner: IRangeResponse | undefined;
  /** With an idempotency key: its record. */
  record: IRangeResponse | undefined;
}

interface UsageRead {
  usage: IKeyValue | undefined;
  /** The ledger the write is charged to, when the budget is on. */
  ledger?: IKeyValue;
  entries: (IKeyValue | undefined)[];
  revision: bigint;
}

const NOTHING_READ: UsageRead = { usage: undefined, entries: [], revision: 0n };
/** What a takeover write is built on (store-payer.ts): its fields that the read gives. */
type TakeOverRead = Pick<TakeOver, "usage" | "entries" | "delta" | "mine" | "theirs">;

/** A takeover of the mutation's resource, from the entries it writes as they were (mod 0: absent) and the state beside them. */
function takeOverOf(
  m: Mutation,
  dataKeys: Buffer[],
  usage: TakeOver["usage"],
  old: { mod: bigint; bytes: bigint }[],
  mine: TakeOver["mine"],
  theirs: TakeOver["theirs"],
): { takeOver: TakeOverRead } {
  const after = (o: StoreOp) => (o.kind === "put" ? BigInt(Buffer.byteLength(o.key, "utf8")) + BigInt(o.value.byteLength) : 0n);
  return {
    takeOver: {
      usage,
      entries: dataKeys.map((key, i) => ({ key, mod: old[i].mod, after: after(m.ops[i]) })),
      delta: m.ops.reduce((n, o, i) => n + after(o) - old[i].bytes, 0n),
      mine: { key: mine.key, bytes: mine.bytes, mod: mine.mod },
      theirs: theirs && { key: theirs.key, bytes: theirs.bytes, mod: theirs.mod },
    },
  };
}


function replay(kv: IKeyValue, fingerprint: string, idempotencyKey: string): Commit {
  const record = decodeRecord(kv);
  if (record.fingerprint !== fingerprint) {
    throw new DomainError(
      "invalid_argument",
      `idempotency_key "${idempotencyKey}" was already used for a different request; use a new key for a new request`,
      "IDEMPOTENCY_KEY_REUSED",
      { idempotency_key: idempotencyKey },
    );
  }
  return { revision: record.revision, fence: record.fence, replayed: true };
}
