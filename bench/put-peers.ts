// The hand-written etcd3 peers of the fenced Put benchmark: what a user would write instead of running
// fencekeeper. Both apply the same fencing rule as the service: in one etcd transaction, compare the
// resource's fence with the writer's generation (fence <= generation), then put the data and set the
// fence to the generation.
//   ByHand:  one conditional txn per write, as the obvious code would do.
//   Ceiling: the same writes packed up to 32 per etcd request as nested txns, every write that arrived
//            while earlier requests were in flight going into the next request: the most a batching
//            service on this etcd could do, the ceiling of issue 9's group commit.
import type { Etcd3 } from "etcd3";
import type { ICompare, IRequestOp, ITxnRequest } from "etcd3/lib/rpc.js";

/** Fixed-width decimal, so that etcd's byte order of values is numeric order. */
export const encodeGeneration = (g: bigint) => Buffer.from(g.toString().padStart(20, "0"));

/** One write: `key` of `resource` under the token generation `generation`. */
export interface FencedWrite {
  resource: string;
  generation: bigint;
  key: string;
  value: Buffer;
}

/** The keys of a peer: `<prefix><resource>/fence` and `<prefix><resource>/d/<key>`. */
class Layout {
  constructor(readonly prefix: string) {}
  fence(resource: string): Buffer {
    return Buffer.from(`${this.prefix}${resource}/fence`);
  }
  data(resource: string, key: string): Buffer {
    return Buffer.from(`${this.prefix}${resource}/d/${key}`);
  }
  /** The fence compare of the rule: fence < generation + 1 (a VALUE compare on a missing key is false). */
  compare(resource: string, generation: bigint): ICompare {
    return { key: this.fence(resource), target: "Value", result: "Less", value: encodeGeneration(generation + 1n) };
  }
}

/** Creates the fences of the given resources at 0, as the service's first acquisition would. */
export async function initFences(etcd: Etcd3, prefix: string, resources: string[]): Promise<void> {
  const layout = new Layout(prefix);
  await Promise.all(resources.map((r) => etcd.put(layout.fence(r)).value(encodeGeneration(0n))));
}

export class ByHand {
  readonly #etcd: Etcd3;
  readonly #layout: Layout;

  constructor(etcd: Etcd3, prefix: string) {
    this.#etcd = etcd;
    this.#layout = new Layout(prefix);
  }

  async write(w: FencedWrite): Promise<void> {
    const res = await this.#etcd.kv.txn({
      compare: [this.#layout.compare(w.resource, w.generation)],
      success: [
        { request_put: { key: this.#layout.data(w.resource, w.key), value: w.value } },
        { request_put: { key: this.#layout.fence(w.resource), value: encodeGeneration(w.generation) } },
      ],
      failure: [],
    });
    if (!res.succeeded) throw new Error(`stale token: generation ${w.generation} of "${w.resource}" refused`);
  }
}

/** Writes per etcd request, as in issue 9's measurement of the ceiling. */
export const CEILING_BATCH = 32;
/** etcd's default --max-txn-ops; nested ops count as: outer ops + the largest inner txn. */
const MAX_TXN_OPS = 128;

interface Pending {
  write: FencedWrite;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Ceiling {
  readonly #etcd: Etcd3;
  readonly #layout: Layout;
  #queue: Pending[] = [];
  #scheduled = false;
  /** Requests sent and writes they carried, to report the batch size reached. */
  requests = 0;
  writes = 0;

  constructor(etcd: Etcd3, prefix: string) {
    this.#etcd = etcd;
    this.#layout = new Layout(prefix);
  }

  write(write: FencedWrite): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the current turn of the event loop: every writer answered by the last request has
        // queued its next write by then, so they share the next request. No timer, no added delay.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0) void this.#send(this.#queue.splice(0, CEILING_BATCH));
  }

  async #send(batch: Pending[]): Promise<void> {
    try {
      const groups = this.#group(batch);
      const inner: IRequestOp[] = [];
      let largest = 0;
      for (const [resource, group] of groups) {
        const generation = group[0].write.generation;
        const txn: ITxnRequest = {
          compare: [this.#layout.compare(resource, generation)],
          success: [
            ...group.map((p) => ({ request_put: { key: this.#layout.data(resource, p.write.key), value: p.write.value } })),
            { request_put: { key: this.#layout.fence(resource), value: encodeGeneration(generation) } },
          ],
          failure: [],
        };
        largest = Math.max(largest, txn.success!.length);
        inner.push({ request_txn: txn });
      }
      if (inner.length + largest > MAX_TXN_OPS) throw new Error(`a batch of ${inner.length} + ${largest} ops is over etcd's ${MAX_TXN_OPS}`);
      this.requests++;
      this.writes += batch.length;
      const res = await this.#etcd.kv.txn({ compare: [], success: inner, failure: [] });
      const members = [...groups.values()];
      res.responses.forEach((r, i) => {
        for (const p of members[i]) {
          if (r.response_txn.succeeded) p.resolve();
          else p.reject(new Error(`stale token: generation ${p.write.generation} of "${p.write.resource}" refused`));
        }
      });
    } catch (err) {
      for (const p of batch) p.reject(err as Error);
    }
  }

  /**
   * One inner txn per resource: a request may not touch a key twice, so the writes of one resource share
   * one fence compare and one fence write. Every write of a resource here carries the same generation; a
   * real committer would split a batch where they differ.
   */
  #group(batch: Pending[]): Map<string, Pending[]> {
    const groups = new Map<string, Pending[]>();
    for (const p of batch) {
      const g = groups.get(p.write.resource);
      if (!g) groups.set(p.write.resource, [p]);
      else if (g[0].write.generation !== p.write.generation) throw new Error("the ceiling peer takes one generation per resource and batch");
      else g.push(p);
    }
    return groups;
  }
}
