// Builders for the pieces of etcd transactions: compares, puts, deletes and reads, typed once here so
// that the domain modules read like the rules they implement.
import type { ICompare, IRequestOp, ITxnRequest, IRangeRequest } from "etcd3";

export const cmp = {
  /** The key's create revision equals rev (0: the key does not exist). */
  createdAt: (key: Buffer, rev: bigint): ICompare => ({ key, target: "Create", result: "Equal", create_revision: rev.toString() }),
  valueGreater: (key: Buffer, value: Buffer): ICompare => ({ key, target: "Value", result: "Greater", value }),
  valueLess: (key: Buffer, value: Buffer): ICompare => ({ key, target: "Value", result: "Less", value }),
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
