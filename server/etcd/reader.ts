// Reads from etcd: consistent snapshots of several ranges at once, single ranges, and watches. Nothing
// here writes.
import type { Etcd3, IRangeRequest, IRangeResponse, IWatchResponse, Watcher } from "etcd3";
import { DomainError } from "../errors/errors.js";
import { AsyncQueue } from "../streams/async-queue.js";
import type { EtcdCalls } from "./calls.js";
import { readPolicy } from "./client.js";
import { classify } from "./classify.js";
import { prefixEnd } from "./keys.js";
import type { Reads } from "./reads.js";

export interface Snapshot<T> {
  /** The etcd revision all the ranges were read at. */
  revision: bigint;
  /** What the reads found, by their names. */
  found: T;
}

export class Reader {
  constructor(
    private readonly etcd: Etcd3,
    private readonly calls: EtcdCalls,
  ) {}

  /** Reads several ranges at one revision (a transaction with no compares and no writes). Reads are sent
   * once more, to another member, when one goes unanswered (client.ts). */
  async snapshot<T>(what: string, reads: Reads<T>): Promise<Snapshot<T>> {
    const res = await this.calls.run(what, () => readPolicy(this.etcd).execute(() => this.etcd.kv.txn({ compare: [], success: reads.ops(), failure: [] })));
    return { revision: BigInt(res.header.revision), found: reads.decodeTxn(res.responses) };
  }

  range(what: string, req: IRangeRequest): Promise<IRangeResponse> {
    return this.calls.run(what, () => readPolicy(this.etcd).execute(() => this.etcd.kv.range(req)));
  }

  /**
   * Watches a key, or the range [key, rangeEnd), from revision fromRevision on, until the watch is
   * closed. The signal closes it too, also while it is being set up; whoever opens a watch closes it on
   * every path out (try/finally), so that etcd never keeps a watcher for a call that ended.
   */
  async watch(what: string, w: { key: Buffer; rangeEnd?: Buffer; fromRevision: bigint }, signal: AbortSignal): Promise<Watch> {
    if (signal.aborted) throw aborted(signal);
    let builder = this.etcd.watch();
    builder = w.rangeEnd ? builder.inRange({ start: w.key, end: w.rangeEnd }) : builder.key(w.key);
    // watcher() hands out the watcher before etcd has created it, so that it can be cancelled while
    // being created (create() would only hand it out once created).
    const watch = new Watch(what, builder.startRevision(w.fromRevision.toString()).watcher(), signal);
    try {
      await this.calls.run(what, () => watch.created);
    } catch (err) {
      await watch.close();
      throw signal.aborted ? aborted(signal) : err;
    }
    return watch;
  }
}

/** A watch of etcd: its responses, in order, until it is closed or fails. */
export class Watch implements AsyncIterable<IWatchResponse> {
  /** Settles once etcd has created the watcher, or the watch closed first. */
  readonly created: Promise<void>;
  private readonly responses = new AsyncQueue<IWatchResponse>();
  private closing?: Promise<void>;
  private cancelledByEtcd = false;
  private readonly onAbort = () => void this.close();

  constructor(
    what: string,
    private readonly watcher: Watcher,
    private readonly signal: AbortSignal,
  ) {
    this.created = new Promise<void>((resolve, reject) => {
      watcher.once("connected", () => resolve());
      watcher.once("error", reject);
      this.responses.closed.then(() => reject(aborted(signal)));
    });
    this.created.catch(() => undefined);
    watcher.on("data", (res) => this.responses.push(res));
    watcher.on("error", (err) => {
      // etcd cancelled the watcher itself (its revision was compacted, say) and etcd3 has let it go:
      // there is nothing left to cancel, and cancel() would wait for an answer that never comes.
      this.cancelledByEtcd = true;
      this.responses.fail(classify(what, err));
    });
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<IWatchResponse> {
    return this.responses[Symbol.asyncIterator]();
  }

  /** Ends the watch and cancels it in etcd; resolves once etcd has let it go. Safe to call again. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.signal.removeEventListener("abort", this.onAbort);
      this.responses.close();
      if (!this.cancelledByEtcd) await this.watcher.cancel().catch(() => undefined);
    })();
    return this.closing;
  }
}

function aborted(signal: AbortSignal): Error {
  return signal.reason instanceof DomainError ? signal.reason : new DomainError("cancelled", "the call was cancelled");
}

/** A range over every key that starts with prefix. */
export function prefixRange(prefix: Buffer, extra: IRangeRequest = {}): IRangeRequest {
  return { key: prefix, range_end: prefixEnd(prefix), ...extra };
}
