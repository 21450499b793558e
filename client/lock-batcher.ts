// Coalesces the concurrent acquisitions and releases of one client into LeaseService.LeaseBatch calls,
// as write-batcher.ts does for writes, with no timer: an op that finds the client idle goes out at once
// as a plain Acquire or Release; the ops that arrive while calls are in flight wait, and the next free
// call carries all of them in one LeaseBatch. Each op still gets exactly its own answer: its grant, or
// the typed error its call alone would have raised.
//
// A LeaseBatch answers when all its ops have, so an acquisition that waits in line must not ride in
// one: it would hold up the answers of the others. An acquisition with wait that finds the client idle
// goes alone, as an Acquire that waits, and does not count as a call in flight (it may wait for
// minutes). One that arrives while calls are in flight goes in the next batch as a try (without wait);
// if the resource is held (RESOURCE_HELD, LOCK_DELAY), it is sent again alone, as the waiting Acquire it
// was. A preempting Acquire always goes alone. A server older than LeaseBatch answers UNIMPLEMENTED:
// from then on, each op goes alone.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { AcquireRequestSchema, type AcquireResponse, type LeaseBatchOpSchema } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import type { FencingTokenSchema } from "../gen/ts/fencekeeper/v1/token_pb.js";
import type { Calls } from "./calls.js";
import { statusToError } from "./error-mapping.js";
import { Coalescer } from "./coalescer.js";
import { CanceledError, FencekeeperError } from "./errors.js";

/** The server's bounds of one LeaseBatch (proto/fencekeeper/v1/lease.proto). */
export const MAX_LEASE_BATCH_OPS = 1000;
export const MAX_LEASE_BATCH_VALUE_BYTES = 2 * 1024 * 1024;

export type AcquireInit = MessageInitShape<typeof AcquireRequestSchema>;
type TokenInit = MessageInitShape<typeof FencingTokenSchema>;

interface Pending {
  op: { case: "acquire"; value: AcquireInit } | { case: "release"; value: { token: TokenInit } };
  bytes: number;
  signal?: AbortSignal;
  /** The deadline of the call alone (an Acquire that waits has a longer one). */
  timeoutMs: number;
  settled: boolean;
  resolve(r: AcquireResponse | undefined): void;
  reject(err: unknown): void;
}

export class LockBatcher {
  /** Two calls in flight: one on its way while the server commits the other, as for writes. */
  readonly #queue = new Coalescer<Pending>({ items: MAX_LEASE_BATCH_OPS, bytes: MAX_LEASE_BATCH_VALUE_BYTES, inFlight: 2 }, (batch) => this.#send(batch));
  /** False once a server answered LeaseBatch with UNIMPLEMENTED. */
  #batches = true;

  constructor(private readonly calls: Calls) {}

  /** Sends one Acquire, alone or in a LeaseBatch with others; resolves with its own answer. */
  acquire(req: AcquireInit, o: { signal?: AbortSignal; timeoutMs: number }): Promise<AcquireResponse> {
    // A preemption never rides with others; nor does a wait when nothing is in flight (the lone acquire
    // pays nothing for the batching).
    if (req.preempt || (req.wait && this.#queue.idle)) return this.#acquireAlone(req, o);
    return this.#enqueue({ case: "acquire", value: req }, req.value?.byteLength ?? 0, o) as Promise<AcquireResponse>;
  }

  /** Sends one Release, alone or in a LeaseBatch with others. */
  async release(token: TokenInit, timeoutMs: number): Promise<void> {
    await this.#enqueue({ case: "release", value: { token } }, 0, { timeoutMs });
  }

  #acquireAlone(req: AcquireInit, o: { signal?: AbortSignal; timeoutMs: number }): Promise<AcquireResponse> {
    return this.calls.run((c) => c.lease.acquire(req, { signal: o.signal, timeoutMs: o.timeoutMs }), false);
  }

  #enqueue(op: Pending["op"], bytes: number, o: { signal?: AbortSignal; timeoutMs: number }): Promise<AcquireResponse | undefined> {
    const signal = o.signal;
    if (signal?.aborted) return Promise.reject(canceled());
    return new Promise((resolve, reject) => {
      const p: Pending = {
        op,
        bytes,
        signal,
        timeoutMs: o.timeoutMs,
        settled: false,
        resolve: (r) => {
          if (p.settled) return;
          p.settled = true;
          signal?.removeEventListener("abort", abort);
          resolve(r);
        },
        reject: (e) => {
          if (p.settled) return;
          p.settled = true;
          signal?.removeEventListener("abort", abort);
          reject(e);
        },
      };
      // An op that has not left is dropped. One in flight is answered when its batch is: a grant the
      // caller no longer wants is then released by the caller, as after an Acquire canceled too late.
      const abort = () => {
        if (this.#queue.drop(p)) p.reject(canceled());
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
    const ops = batch.map((p): MessageInitShape<typeof LeaseBatchOpSchema> => {
      // A wait rides as a try: the answer of a batch must not wait for a line.
      if (p.op.case === "acquire" && p.op.value.wait) return { op: { case: "acquire", value: { ...p.op.value, wait: false, waitTimeout: undefined } } };
      return { op: p.op };
    });
    const repeatable = batch.every((p) => p.op.case === "release");
    try {
      results = (await this.calls.run((c) => c.lease.leaseBatch({ ops }, { timeoutMs: this.calls.timeoutMs }), repeatable)).results;
    } catch (err) {
      if (err instanceof FencekeeperError && err.code === Code.Unimplemented) {
        // A server without LeaseBatch applied none of them.
        this.#batches = false;
        await Promise.all(batch.map((p) => this.#alone(p)));
        return;
      }
      for (const p of batch) p.reject(err);
      return;
    }
    await Promise.all(
      batch.map(async (p, i) => {
        const r = results[i]?.result;
        if (r?.case === "acquired") p.resolve(r.value);
        else if (r?.case === "released") p.resolve(undefined);
        else if (r?.case === "error") {
          const err = statusToError(r.value);
          // Held: the acquisition that was to wait now waits, alone.
          if (p.op.case === "acquire" && p.op.value.wait && (err.reason === "RESOURCE_HELD" || err.reason === "LOCK_DELAY") && !p.signal?.aborted) {
            void this.#alone(p);
          } else {
            p.reject(err);
          }
        } else p.reject(new FencekeeperError(`the server gave no answer for op ${i} of a batch of ${batch.length}`, Code.Internal));
      }),
    );
  }

  /** Sends p as the call alone; an Acquire that waits is not awaited, so that it holds no batch's turn. */
  async #alone(p: Pending): Promise<void> {
    if (p.op.case === "acquire" && p.op.value.wait) {
      void this.#call(p);
      return;
    }
    await this.#call(p);
  }

  async #call(p: Pending): Promise<void> {
    try {
      const op = p.op;
      if (op.case === "acquire") {
        p.resolve(await this.#acquireAlone(create(AcquireRequestSchema, op.value), { signal: p.signal, timeoutMs: p.timeoutMs }));
      } else {
        await this.calls.run((c) => c.lease.release(op.value, { timeoutMs: p.timeoutMs }), true);
        p.resolve(undefined);
      }
    } catch (err) {
      p.reject(err);
    }
  }
}

const canceled = () => new CanceledError("the acquire was canceled", Code.Canceled);
