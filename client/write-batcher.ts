// Coalesces the concurrent Puts and Deletes of one client into FencedStoreService.Batch calls, with no
// timer: a write that finds the client idle goes out at once as a plain Put or Delete; the writes that
// arrive while calls are in flight wait, and the next free call carries all of them in one Batch
// (group while busy, as the server's committer does towards etcd). One synchronous burst of writes
// (the same turn of the event loop) also goes out as one call. Each write still gets exactly its own
// answer: its commit, or the typed error its Put or Delete alone would have raised, idempotency keys
// included. A server older than Batch answers UNIMPLEMENTED: from then on, each write goes alone.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { Commit as ProtoCommit, DeleteRequestSchema, PutRequestSchema } from "../gen/ts/fencekeeper/v1/store_pb.js";
import type { Calls } from "./calls.js";
import { statusToError } from "./error-mapping.js";
import { Coalescer } from "./coalescer.js";
import { CanceledError, FencekeeperError, UnavailableError } from "./errors.js";

/** The server's bounds of one Batch (proto/fencekeeper/v1/store.proto). */
export const MAX_BATCH_WRITES = 1000;
export const MAX_BATCH_VALUE_BYTES = 2 * 1024 * 1024;

export type Write =
  | { case: "put"; value: MessageInitShape<typeof PutRequestSchema> }
  | { case: "delete"; value: MessageInitShape<typeof DeleteRequestSchema> };

interface Pending {
  write: Write;
  bytes: number;
  signal?: AbortSignal;
  settled: boolean;
  resolve(c: ProtoCommit | undefined): void;
  reject(err: unknown): void;
}

export class WriteBatcher {
  /** Two calls in flight, as the server's committer keeps two etcd requests in flight. */
  readonly #queue = new Coalescer<Pending>({ items: MAX_BATCH_WRITES, bytes: MAX_BATCH_VALUE_BYTES, inFlight: 2 }, (batch) => this.#send(batch));
  /** False once a server answered Batch with UNIMPLEMENTED. */
  #batches = true;

  constructor(private readonly calls: Calls) {}

  /** Sends one write, alone or in a Batch with others; resolves with its own commit. */
  write(write: Write, signal?: AbortSignal): Promise<ProtoCommit | undefined> {
    if (signal?.aborted) return Promise.reject(canceled());
    return new Promise((resolve, reject) => {
      const p: Pending = {
        write,
        bytes: write.case === "put" ? (write.value.value?.byteLength ?? 0) : 0,
        signal,
        settled: false,
        resolve: (c) => {
          if (p.settled) return;
          p.settled = true;
          signal?.removeEventListener("abort", abort);
          resolve(c);
        },
        reject: (e) => {
          if (p.settled) return;
          p.settled = true;
          signal?.removeEventListener("abort", abort);
          reject(e);
        },
      };
      // An aborted write that has not left is dropped; one in flight is answered canceled at once, and
      // may or may not apply, as a Put canceled in flight.
      const abort = () => {
        this.#queue.drop(p);
        p.reject(canceled());
      };
      signal?.addEventListener("abort", abort, { once: true });
      this.#queue.push(p);
    });
  }

  async #send(batch: Pending[]): Promise<void> {
    if (batch.length === 1 || !this.#batches) {
      await Promise.all(batch.map((p) => this.#alone(p)));
      return;
    }
    let results;
    try {
      const writes = batch.map((p) => ({ write: p.write }));
      results = (await this.calls.run((c) => c.store.batch({ writes }, { timeoutMs: this.calls.timeoutMs }), false)).results;
    } catch (err) {
      if (err instanceof FencekeeperError && err.code === Code.Unimplemented) {
        // A server without Batch applied none of them.
        this.#batches = false;
        await Promise.all(batch.map((p) => this.#alone(p)));
        return;
      }
      for (const p of batch) p.reject(lost(err));
      return;
    }
    batch.forEach((p, i) => {
      const r = results[i]?.result;
      if (r?.case === "commit") p.resolve(r.value);
      else if (r?.case === "error") p.reject(statusToError(r.value));
      else p.reject(new FencekeeperError(`the server gave no answer for write ${i} of a batch of ${batch.length}`, Code.Internal));
    });
  }

  async #alone(p: Pending): Promise<void> {
    const options = { signal: p.signal, timeoutMs: this.calls.timeoutMs };
    try {
      const w = p.write;
      const res = await this.calls.run<{ commit?: ProtoCommit }>((c) => (w.case === "put" ? c.store.put(w.value, options) : c.store.delete(w.value, options)), false);
      p.resolve(res.commit);
    } catch (err) {
      p.reject(p.signal?.aborted ? err : lost(err));
    }
  }
}

/**
 * A call the caller did not cancel that ends CANCELED with no ErrorInfo was cut off under it: connect
 * reports an HTTP/2 stream reset by a server that went away (RST_STREAM CANCEL) so. The write may or may
 * not have been applied, which is what UnavailableError says.
 */
function lost(err: unknown): unknown {
  if (!(err instanceof FencekeeperError) || err.code !== Code.Canceled || err.reason !== undefined) return err;
  return new UnavailableError(
    `the call was cut off (${err.message}); the write may or may not have been applied: retry it with the same idempotency key`,
    Code.Unavailable,
    undefined,
    {},
    { cause: err },
  );
}

const canceled = () => new CanceledError("the write was canceled", Code.Canceled);
