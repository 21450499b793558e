// Whose budget a write of the fenced store is charged to (--max-store-bytes-per-caller, docs/budgets.md).
//
// The bytes a resource stores are charged to one principal, its payer, named in its usage key (keys.ts):
// the principal of the last token that put bytes into it. Its ledger counts the bytes of every resource
// it pays for, and is rewritten in the transaction of every write that changes them (committer.ts), so
// that the budget is decided where the bytes are written, exactly, across replicas.
//  - A write by the payer, or into a resource that stores nothing, is charged to the writer.
//  - A write that puts into a resource whose bytes are another's takes the resource over first, in a
//    transaction of its own that holds only if the writer's token is current (the fence's compares):
//    the resource's bytes leave the old payer's ledger and join the writer's, which must have room for
//    them. The holder of a resource's token owns what it stores, as it owns the resource.
//  - A write that only deletes is charged to the payer: its bytes leave the payer's ledger, and a holder
//    may always delete what it finds, whatever its own budget.
// A resource written before the budget was on names no payer: its next put takes it over, and a delete
// is charged to nobody.
import type { IRequestOp } from "etcd3";
import type { Committer, Guard, Outcome } from "../etcd/committer.js";
import { decodeUsage, encodeUsage, principalTag, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";
import { reads } from "../etcd/reads.js";
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
  limit: bigint;
  /** The mutation's guard: the takeover holds only where the write would. */
  guard: Guard;
}

/**
 * Takes a resource over for its writer: its usage key names the writer, and its bytes move from its
 * payer's ledger to the writer's. A refusal when the writer's ledger has no room for them; the
 * transaction's outcome otherwise (failed: the guard refused, or something it read moved).
 */
export async function takeOver(d: { keys: KeyLayout; reader: Reader; committer: Committer }, t: TakeOver): Promise<Outcome> {
  const { keys, reader, committer } = d;
  const usageKey = keys.usageKey(t.resource);
  const mine = keys.callerStoreKey(t.writer);
  const first = await reader.snapshot("store payer read", reads({ usage: { key: usageKey }, mine: { key: mine } }));
  const usage = decodeUsage(first.found.usage.kvs[0]);
  const ledger = decodeUsage(first.found.mine.kvs[0]);
  const theirs = usage.payer && usage.payer !== t.writer ? keys.callerStoreKey(usage.payer) : undefined;
  const old = theirs ? decodeUsage((await reader.range("store payer read", { key: theirs })).kvs[0]) : undefined;
  if (ledger.bytes + usage.bytes > t.limit) {
    throw exhausted("caller_store_bytes", {
      limit: t.limit,
      used: ledger.bytes,
      delta: usage.bytes,
      who: `"${t.principal}" is charged ${ledger.bytes} bytes of store entries, and a put into "${t.resource}" takes over its ${usage.bytes} bytes, charged to another principal,`,
      unit: "bytes",
      hint: `nothing was written. Delete entries of "${t.resource}" first (a write that only deletes is charged to its payer), or entries of resources you pay for, or ask the operator for a larger budget`,
      more: { resource: t.resource, principal: t.principal },
    });
  }
  const compare = [...t.guard.compare, cmp.modAt(usageKey, usage.mod), cmp.modAt(mine, ledger.mod), ...(theirs ? [cmp.modAt(theirs, old!.mod)] : [])];
  const success: IRequestOp[] = [op.put(usageKey, encodeUsage(usage.bytes, t.writer)), op.put(mine, encodeUsage(ledger.bytes + usage.bytes))];
  if (theirs) success.push(op.put(theirs, encodeUsage(old!.bytes - usage.bytes)));
  return committer.commit("store payer takeover", { compare, success, failure: t.guard.failure });
}
