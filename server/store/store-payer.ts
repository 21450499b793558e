// Whose budget a write of the fenced store is charged to (--max-store-bytes-per-caller, docs/budgets.md).
//
// The bytes a resource stores are charged to one principal, its payer, named in its usage key (keys.ts):
// the principal of the last token that put bytes into it. Its ledger counts the bytes of every resource
// it pays for, and is rewritten in the transaction of every write that changes them (committer.ts), so
// that the budget is decided where the bytes are written, exactly, across replicas.
//  - A write by the payer, or into a resource that stores nothing, is charged to the writer.
//  - A write that puts into a resource whose bytes are another's takes the resource over, in the write's
//    own transaction (takeOverWrite, outside the committer's groups: it rewrites two ledgers): the
//    resource's bytes leave the old payer's ledger and join the writer's, which must have room for them.
//    The holder of a resource's token owns what it stores, as it owns the resource.
//  - A write that only deletes is charged to the payer: its bytes leave the payer's ledger, and a holder
//    may always delete what it finds, whatever its own budget.
// A resource written before the budget was on names no payer: its next put takes it over, and a delete
// is charged to nobody.
import type { IRequestOp } from "etcd3";
import type { Committer, Guard, Outcome } from "../etcd/committer.js";
import { DomainError } from "../errors/errors.js";
import { decodeUsage, encodeUsage, principalTag } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import { exhausted } from "../budgets/budget.js";

/** Who pays for a write: the payer its usage key names after it, and whose ledger it is charged to. */
export interface PayerPlan {
  /** Undefined: the budget is off, and whatever payer the key names stays. */
  payer?: string;
  /** The tag of the ledger charged; undefined: none. */
  ledger?: string;
  /** The writer must take the resource over first. */
  takeOver?: boolean;
}

/** The writer's tag, when the budget is kept for its writes: on, and the token names a principal. */
export function writerTag(limit: bigint, principal: string | undefined): string {
  return limit > 0n && principal ? principalTag(principal) : "";
}

/** Who pays for a write by `writer` (a tag, "" when the budget is off) of a resource as `usage` holds it. */
export function planPayer(usage: { bytes: bigint; payer?: string }, writer: string, puts: boolean): PayerPlan {
  if (!writer) return {};
  const payer = usage.payer ?? "";
  if (usage.bytes === 0n || payer === writer) return { payer: writer, ledger: writer };
  if (puts) return { takeOver: true };
  return payer ? { payer, ledger: payer } : { payer: "" };
}

export interface TakeOver {
  resource: string;
  /** The writer's principal (its name, for the refusal) and tag. */
  principal: string;
  writer: string;
  /** The budget of --max-store-bytes-per-caller, and the resource's quota. */
  limit: bigint;
  resourceLimit: bigint;
  /** The mutation's guard and its own writes (the entries, the idempotency record). */
  guard: Guard;
  own: IRequestOp[];
  /** The resource's usage key, the entries the write changes, and the writer's ledger, as read (keys.ts). */
  usage: { key: Buffer; bytes: bigint; mod: bigint; payer: string };
  /** Each entry as read (its mod revision: 0, absent) and the bytes the write leaves there. */
  entries: { key: Buffer; mod: bigint; after: bigint }[];
  /** What the write changes in the resource's bytes. */
  delta: bigint;
  mine: { key: Buffer; bytes: bigint; mod: bigint };
  /** The old payer's ledger; none when the resource named no payer. */
  theirs?: { key: Buffer; bytes: bigint; mod: bigint };
}

export interface TakenOver {
  outcome: Outcome;
  /** Failed because the usage key or a ledger was not as read: build the write again on a new read. */
  moved: boolean;
}

/**
 * A put into a resource another principal pays for, in one transaction: the write itself, its resource's
 * usage key naming the writer, the resource's bytes moved from the old payer's ledger to the writer's,
 * all compared at the revisions read. Refused before anything is sent when the writer's ledger has no
 * room for the resource's bytes and the write's, or the resource's quota none for the write.
 */
export async function takeOverWrite(committer: Committer, t: TakeOver): Promise<TakenOver> {
  const after = t.usage.bytes + t.delta;
  if (t.delta > 0n && after > t.resourceLimit) throw resourceOver(t.resource, t.usage.bytes, t.delta, t.resourceLimit);
  if (t.mine.bytes + after > t.limit) {
    throw exhausted("caller_store_bytes", {
      limit: t.limit,
      used: t.mine.bytes,
      delta: after,
      who: `"${t.principal}" is charged ${t.mine.bytes} bytes of store entries, and a put into "${t.resource}" takes over its ${t.usage.bytes} bytes, charged to another principal,`,
      unit: "bytes",
      hint: `nothing was written. Delete entries of "${t.resource}" first (a write that only deletes is charged to its payer), or entries of resources you pay for, or ask the operator for a larger budget`,
      more: { resource: t.resource, principal: t.principal },
    });
  }
  const ledgers = [t.mine, ...(t.theirs ? [t.theirs] : [])];
  const compare = [...t.guard.compare, cmp.modAt(t.usage.key, t.usage.mod), ...ledgers.map((l) => cmp.modAt(l.key, l.mod)), ...t.entries.map((e) => cmp.modAt(e.key, e.mod))];
  const success: IRequestOp[] = [
    ...t.guard.shared,
    ...t.own,
    op.put(t.usage.key, encodeUsage(after, t.writer)),
    op.put(t.mine.key, encodeUsage(t.mine.bytes + after)),
    ...(t.theirs ? [op.put(t.theirs.key, encodeUsage(t.theirs.bytes - t.usage.bytes))] : []),
  ];
  const failure = [...t.guard.failure, op.get(t.usage.key), ...ledgers.map((l) => op.get(l.key))];
  const outcome = await committer.commit("store payer takeover", { compare, success, failure });
  if (outcome.succeeded) {
    const seen = outcome.revision;
    committer.learn(t.usage.key, { bytes: after, mod: seen, seen, payer: t.writer });
    committer.learn(t.mine.key, { bytes: t.mine.bytes + after, mod: seen, seen });
    if (t.theirs) committer.learn(t.theirs.key, { bytes: t.theirs.bytes - t.usage.bytes, mod: seen, seen });
    for (const e of t.entries) committer.learn(e.key, { bytes: e.after, mod: e.after > 0n ? seen : 0n, seen });
    return { outcome: { ...outcome, responses: outcome.responses.slice(t.guard.shared.length, t.guard.shared.length + t.own.length) }, moved: false };
  }
  const found = outcome.responses.slice(t.guard.failure.length).map((r) => decodeUsage(r.response_range.kvs[0]).mod);
  const moved = found[0] !== t.usage.mod || ledgers.some((l, i) => found[i + 1] !== l.mod);
  return { outcome, moved };
}

/** The refusal of a write past its resource's quota (--max-bytes-per-resource). */
export function resourceOver(resource: string, usage: bigint, delta: bigint, limit: bigint): DomainError {
  return new DomainError(
    "resource_exhausted",
    `quota exceeded: "${resource}" stores ${usage} bytes and this write adds ${delta}, over its quota of ${limit} bytes ` +
      "(--max-bytes-per-resource; keys and values count); nothing was written. Delete entries of the resource, or ask the operator for a larger quota",
    "QUOTA_EXCEEDED",
    { resource, usage: String(usage), delta: String(delta), limit: String(limit) },
  );
}

/** The refusal of a write past its payer's budget (--max-store-bytes-per-caller), in the committer's transaction. */
export function callerOver(principal: string, resource: string, used: bigint, delta: bigint, limit: bigint): DomainError {
  return exhausted("caller_store_bytes", {
    limit,
    used,
    delta,
    who: `"${principal}" is charged ${used} bytes of store entries (of the resources whose bytes it last put)`,
    unit: "bytes",
    hint: "nothing was written. Delete entries of resources you pay for, or ask the operator for a larger budget",
    more: { resource, principal },
  });
}
