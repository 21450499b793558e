// The fenced store, call by call, with the token given explicitly. Writes through a Lease use these with
// the lease's token; these are also for a program that keeps a token itself (the CLI's --token).
import { FenceMode } from "../gen/ts/fencekeeper/v1/token_pb.js";
import type { Calls } from "./calls.js";
import { tokenToProto, type Token } from "./token.js";
import type { WriteBatcher } from "./write-batcher.js";

export type Value = string | Uint8Array;

/** How the store judges a write's token: "order" (generation >= fence) or "live" (also: lease still held). */
export type FenceModeName = "order" | "live";

export interface WriteOptions {
  /** Unset: the server's default, "order". */
  mode?: FenceModeName;
  /** A retry with the same key and request returns the first result and applies nothing. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export interface ReadOptions {
  signal?: AbortSignal;
}

export interface Commit {
  /** The etcd revision of the write. */
  revision: bigint;
  /** The resource's fence after the write: the token's generation. */
  fence: bigint;
  /** True when this is the recorded answer of an earlier request with the same idempotency key. */
  replayed: boolean;
}

export interface GetResult {
  found: boolean;
  /** Empty when not found. */
  value: Uint8Array;
  modRevision: bigint;
  /** The resource's fence when the key was read. */
  fence: bigint;
}

export interface Entry {
  key: string;
  /** Empty with keysOnly. */
  value: Uint8Array;
  modRevision: bigint;
}

export interface ListOptions extends ReadOptions {
  /** Only keys that start with this. */
  prefix?: string;
  keysOnly?: boolean;
  /** Entries fetched per call; the server's default when unset. */
  pageSize?: number;
}

/** One operation of a transaction: `{ put: key, value }` or `{ delete: key }`. */
export type TxnOp = { put: string; value: Value } | { delete: string };

const MODES: Record<FenceModeName, FenceMode> = { order: FenceMode.ORDER, live: FenceMode.LIVE };

const bytes = (v: Value): Uint8Array => (typeof v === "string" ? new TextEncoder().encode(v) : v);

export class Store {
  /** batcher: when set, puts and deletes go through it, coalesced into Batch calls (write-batcher.ts). */
  constructor(
    private readonly calls: Calls,
    private readonly batcher?: WriteBatcher,
  ) {}

  async put(token: Token, key: string, value: Value, o: WriteOptions = {}): Promise<Commit> {
    if (this.batcher) {
      return commit(await this.batcher.write({ case: "put", value: { resource: token.resource, key, value: bytes(value), mutation: mutation(token, o) } }, o.signal));
    }
    const res = await this.calls.run(
      (c) => c.store.put({ resource: token.resource, key, value: bytes(value), mutation: mutation(token, o) }, this.options(o)),
      false,
    );
    return commit(res.commit);
  }

  async delete(token: Token, key: string, o: WriteOptions = {}): Promise<Commit> {
    if (this.batcher) {
      return commit(await this.batcher.write({ case: "delete", value: { resource: token.resource, key, mutation: mutation(token, o) } }, o.signal));
    }
    const res = await this.calls.run((c) => c.store.delete({ resource: token.resource, key, mutation: mutation(token, o) }, this.options(o)), false);
    return commit(res.commit);
  }

  async txn(token: Token, ops: TxnOp[], o: WriteOptions = {}): Promise<Commit> {
    const proto = ops.map((op) =>
      "put" in op
        ? { op: { case: "put" as const, value: { key: op.put, value: bytes(op.value) } } }
        : { op: { case: "delete" as const, value: { key: op.delete } } },
    );
    const res = await this.calls.run((c) => c.store.txn({ resource: token.resource, ops: proto, mutation: mutation(token, o) }, this.options(o)), false);
    return commit(res.commit);
  }

  async get(resource: string, key: string, o: ReadOptions = {}): Promise<GetResult> {
    const res = await this.calls.run((c) => c.store.get({ resource, key }, this.options(o)), true);
    return { found: res.found, value: res.value, modRevision: res.modRevision, fence: res.fence };
  }

  /** Every entry of a resource (under a prefix), in key order, fetched a page at a time from one snapshot. */
  async *list(resource: string, o: ListOptions = {}): AsyncGenerator<Entry> {
    let pageToken = "";
    do {
      const req = { resource, prefix: o.prefix ?? "", pageSize: o.pageSize ?? 0, pageToken, keysOnly: o.keysOnly ?? false };
      const page = await this.calls.run((c) => c.store.range(req, this.options(o)), true);
      for (const e of page.entries) yield { key: e.key, value: e.value, modRevision: e.modRevision };
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** The resource's fence (the greatest generation accepted) and the greatest generation issued. */
  async fence(resource: string, o: ReadOptions = {}): Promise<{ fence: bigint; lastIssued: bigint }> {
    const res = await this.calls.run((c) => c.store.getFence({ resource }, this.options(o)), true);
    return { fence: res.fence, lastIssued: res.lastIssued };
  }

  private options(o: { signal?: AbortSignal }) {
    return { signal: o.signal, timeoutMs: this.calls.timeoutMs };
  }
}

function mutation(token: Token, o: WriteOptions) {
  return { token: tokenToProto(token), mode: o.mode ? MODES[o.mode] : FenceMode.UNSPECIFIED, idempotencyKey: o.idempotencyKey ?? "" };
}

function commit(c: { revision: bigint; fence: bigint; replayed: boolean } | undefined): Commit {
  return { revision: c?.revision ?? 0n, fence: c?.fence ?? 0n, replayed: c?.replayed ?? false };
}
