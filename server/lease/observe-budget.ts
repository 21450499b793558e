// What one Observe message may weigh (answers/budget.ts): the exclusive holder's value, or the shared
// holders' values oldest first while the message stays within the budget; the values past it are left
// out (Holder.value_left_out), for Describe to give a page at a time. And what a message weighs while
// it waits for a slow reader (streams/coalescing-queue.ts).
import { holderBytes, STATE_OVERHEAD } from "../answers/budget.js";
import type { HolderState, Ownership } from "./observe.js";

export function withinBudget(resource: string, o: Ownership, maxBytes: number): Ownership {
  if (o.token) return o; // exclusive: one holder, one value (at most 1 MiB), sent at the top
  let left = maxBytes - STATE_OVERHEAD - [...o.joined, ...o.left].reduce((n, h) => n + holderBytes(resource, h, false), 0);
  let changed = false;
  const holders = o.holders.map((h, i) => {
    const bytes = holderBytes(resource, h, true);
    if (i === 0 || bytes <= left) {
      left -= bytes;
      return h;
    }
    left -= holderBytes(resource, h, false);
    if (!h.value?.byteLength) return h;
    changed = true;
    const { value: _v, ...rest } = h;
    return { ...rest, valueLeftOut: true } satisfies HolderState;
  });
  return changed ? { ...o, holders } : o;
}

/** A message's bytes as it will be sent: each value once. */
export function ownershipBytes(resource: string, o: Ownership): number {
  let bytes = STATE_OVERHEAD + (o.value?.byteLength ?? 0);
  for (const h of o.holders) bytes += holderBytes(resource, h, !o.token && !h.valueLeftOut);
  for (const h of [...o.joined, ...o.left]) bytes += holderBytes(resource, h, false);
  return bytes;
}
