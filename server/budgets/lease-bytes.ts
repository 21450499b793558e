// --max-bytes-per-lease, decided by etcd: what the acquisitions of one lease or session store (their
// election values, holder labels and records) is counted in a usage key attached to that lease
// (keys.ts, leaseBytesKey). A charge is a transaction that finds the key as it was read and writes the
// new count, so that no interleaving of calls, on one replica or many, takes a lease past its budget.
//
// Why on the lease: a value lives exactly as long as its lease, and an expiry runs none of our code; a
// key on the lease ends with it, so the bytes come free at the very moment the values go, however the
// lease ends. A principal's election values are then bounded exactly by --max-leases-per-caller ×
// --max-bytes-per-lease (both decided in etcd), and a session's acquisitions cannot escape the lease cap:
// they share their session's bytes.
//
// A charge is taken before the write it pays for and given back if that write fails; a replica that
// dies between the two leaves the lease charged for bytes it does not store, until the lease ends
// (never the reverse).
import { DomainError } from "../errors/errors.js";
import type { Committer } from "../etcd/committer.js";
import { decodeUsage, encodeUsage, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";
import { exhausted } from "./budget.js";

export interface LeaseBytesDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
}

/** What an acquisition's records cost besides its name, label and value: its keys and their framing. */
export const ACQUISITION_RECORD_BYTES = 512;

/**
 * The bytes one acquisition is charged on its lease: its value and its records, when it publishes a value.
 * An acquisition without a value is charged nothing: its records are small (bounded by the limits on names
 * and labels) and written at the pace of the caller's history budget, like the issued and fence keys every
 * resource keeps; charging them would put a read and a transaction on every lock cycle, the service's
 * hottest path, for bytes that the value-less lock path bounds anyway.
 */
export function acquisitionBytes(resource: string, holder: string, value: Uint8Array | undefined, principal?: string): bigint {
  if (!value?.byteLength) return 0n;
  const n = (s: string | undefined) => (s === undefined ? 0 : Buffer.byteLength(s));
  return BigInt(ACQUISITION_RECORD_BYTES + 2 * n(resource) + n(holder) + n(principal) + value.byteLength);
}

/** Tries before giving up: each failed try means another call of the same lease charged meanwhile. */
const MAX_TRIES = 32;

/**
 * Charges delta bytes to the lease (a negative delta gives bytes back, never below zero), or throws
 * LEASE_BYTES_EXCEEDED when it would take the lease past limit. Throws LEASE_NOT_FOUND for a lease that
 * is gone.
 */
export async function chargeLeaseBytes(d: LeaseBytesDeps, leaseId: bigint, delta: bigint, limit: number): Promise<void> {
  if (delta === 0n) return;
  const key = d.keys.leaseBytesKey(leaseId);
  for (let tries = 0; tries < MAX_TRIES; tries++) {
    const found = await d.reader.range("lease bytes", { key });
    const usage = decodeUsage(found.kvs[0]);
    const next = usage.bytes + delta;
    if (delta > 0n && next > BigInt(limit)) {
      throw exhausted("lease_bytes", {
        who: `lease ${leaseId} stores ${usage.bytes} bytes of acquisitions (values, labels, records)`,
        limit,
        used: usage.bytes,
        delta,
        unit: "bytes",
        hint: "nothing was written; release acquisitions of this lease or session, proclaim a smaller value, or acquire on another lease",
        more: { lease_id: String(leaseId) },
      });
    }
    const res = await d.committer.commit("lease bytes", {
      compare: [found.kvs[0] ? cmp.modAt(key, usage.mod) : cmp.createdAt(key, 0n)],
      success: [op.put(key, encodeUsage(next), leaseId)],
      failure: [],
    });
    if (res.succeeded) return;
  }
  throw new DomainError("aborted", `the bytes of lease ${leaseId} changed under ${MAX_TRIES} tries of this call (too many calls on one lease at once); send it again`);
}

/** Gives bytes back, best effort: a lease that ended gave them back already. */
export function giveBackLeaseBytes(d: LeaseBytesDeps, leaseId: bigint, bytes: bigint): Promise<void> {
  return chargeLeaseBytes(d, leaseId, -bytes, Number.MAX_SAFE_INTEGER).catch(() => undefined);
}
