// Builders for the pieces of etcd transactions: compares, puts, deletes and reads, typed once here so
// that the domain modules read like the rules they implement.
import type { ICompare, IRequestOp, ITxnRequest, IRangeRequest } from "etcd3";

export const cmp = {
  /** The key's create revision equals rev (0: the key does not exist). */
  createdAt: (key: Buffer, rev: bigint): ICompare => ({ key, target: "Create", result: "Equal", create_revision: rev.toString() }),
  /** The key exists. */
  exists: (key: Buffer): ICompare => ({ key, target: "Create", result: "Greater", create_revision: "0" }),
  /** The key's mod revision equals rev (0: the key does not exist). */
  modAt: (key: Buffer, rev: bigint): ICompare => ({ key, target: "Mod", result: "Equal", mod_revision: rev.toString() }),
  /** The key's mod revision is greater than rev (a missing key has 0). */
  modAbove: (key: Buffer, rev: bigint): ICompare => ({ key, target: "Mod", result: "Greater", mod_revision: rev.toString() }),
  /** The key is attached to lease id. */
  leaseIs: (key: Buffer, id: bigint): ICompare => ({ key, target: "Lease", result: "Equal", lease: id.toString() }),
  valueIs: (key: Buffer, value: Buffer): ICompare => ({ key, target: "Value", result: "Equal", value }),
  valueLess: (key: Buffer, value: Buffer): ICompare => ({ key, target: "Value", result: "Less", value }),
  /** No key in [key, rangeEnd) exists (etcd compares every key of a range; an empty range passes). */
  rangeEmpty: (key: Buffer, rangeEnd: Buffer): ICompare => ({ key, range_end: rangeEnd, target: "Create", result: "Equal", create_revision: "0" }),
  /**
   * Every key in [key, rangeEnd) was created at rev or later. An empty range fails it: etcd then judges
   * a missing key, whose create revision is 0 (use it on a range that holds the caller's own key).
   */
  rangeCreatedFrom: (key: Buffer, rangeEnd: Buffer, rev: bigint): ICompare => ({
    key,
    range_end: rangeEnd,
    target: "Create",
    result: "Greater",
    create_revision: (rev - 1n).toString(),
  }),
};

export const op = {
  put: (key: Buffer, value: Buffer, lease?: bigint): IRequestOp => ({
    request_put: { key, value, ...(lease !== undefined ? { lease: lease.toString() } : {}) },
  }),
  del: (key: Buffer): IRequestOp => ({ request_delete_range: { key } }),
  get: (key: Buffer): IRequestOp => ({ request_range: { key } }),
  range: (req: IRangeRequest): IRequestOp => ({ request_range: req }),
  txn: (txn: ITxnRequest): IRequestOp => ({ request_txn: txn }),
};
