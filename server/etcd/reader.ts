// Reads from etcd: consistent snapshots of several ranges at once, and watches. Nothing here writes.
import type { Etcd3, IRangeRequest, IRangeResponse, Watcher } from "etcd3";
import { etcdCall } from "./client.js";
import { prefixEnd } from "./keys.js";

export interface Snapshot {
  /** The etcd revision all the ranges were read at. */
  revision: bigint;
  ranges: IRangeResponse[];
}

export class Reader {
  constructor(private readonly etcd: Etcd3) {}

  /** Reads several ranges at one revision (a transaction with no compares and no writes). */
  async snapshot(what: string, ranges: IRangeRequest[]): Promise<Snapshot> {
    const res = await etcdCall(what, () =>
      this.etcd.kv.txn({ compare: [], success: ranges.map((r) => ({ request_range: r })), failure: [] }),
    );
    return {
      revision: BigInt(res.header.revision),
      ranges: res.responses.map((r) => r.response_range),
    };
  }

  range(what: string, req: IRangeRequest): Promise<IRangeResponse> {
    return etcdCall(what, () => this.etcd.kv.range(req));
  }

  /** Watches every key under prefix, from revision fromRevision on. */
  watchPrefix(prefix: Buffer, fromRevision: bigint): Promise<Watcher> {
    return etcdCall("watch", () =>
      this.etcd.watch().inRange({ start: prefix, end: prefixEnd(prefix) }).startRevision(fromRevision.toString()).create(),
    );
  }

  /** Watches one key, from revision fromRevision on. */
  watchKey(key: Buffer, fromRevision: bigint): Promise<Watcher> {
    return etcdCall("watch", () => this.etcd.watch().key(key).startRevision(fromRevision.toString()).create());
  }
}

/** A range over every key that starts with prefix. */
export function prefixRange(prefix: Buffer, extra: IRangeRequest = {}): IRangeRequest {
  return { key: prefix, range_end: prefixEnd(prefix), ...extra };
}
