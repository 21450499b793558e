// The one way this client gathers concurrent calls into batches, with no timer (write-batcher.ts for
// Puts and Deletes, lock-batcher.ts for Acquires and Releases): an item queued in a turn of the event
// loop goes out at the end of that turn; while calls are in flight, items wait, and the next free call
// carries as many as fit in one batch (group while busy, as the server's committer does towards etcd).

/** What the coalescer needs of a queued item: the bytes it adds to a batch. */
export interface Queued {
  bytes: number;
}

export interface CoalescerLimits {
  /** Items one batch may carry. */
  items: number;
  /** Bytes of values one batch may carry (a batch holds at least one item, whatever its size). */
  bytes: number;
  /** Calls in flight at once: two, so that one batch is on its way while the server commits the other. */
  inFlight: number;
}

export class Coalescer<P extends Queued> {
  readonly #queue: P[] = [];
  #inFlight = 0;
  #scheduled = false;

  constructor(
    private readonly limits: CoalescerLimits,
    /** Sends one batch (one item or more) and settles each of its items. */
    private readonly send: (batch: P[]) => Promise<void>,
  ) {}

  /** No call in flight and nothing waiting: an item now would go out alone at once. */
  get idle(): boolean {
    return this.#inFlight === 0 && this.#queue.length === 0;
  }

  push(p: P): void {
    this.#queue.push(p);
    this.#schedule();
  }

  /** Takes p out of the queue if it has not left yet: true if it was still waiting. */
  drop(p: P): boolean {
    const i = this.#queue.indexOf(p);
    if (i < 0) return false;
    this.#queue.splice(i, 1);
    return true;
  }

  /** Pumps at the end of this turn, so that a burst of items made in one turn goes out together. */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.limits.inFlight) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.limits.inFlight && this.#queue.length > 0) {
      const batch = this.#take();
      this.#inFlight++;
      void this.send(batch).finally(() => {
        this.#inFlight--;
        this.#pump();
      });
    }
  }

  /** What one batch may carry, from the front of the queue: at least one item. */
  #take(): P[] {
    let n = 0;
    let bytes = 0;
    while (n < this.#queue.length && n < this.limits.items) {
      const b = this.#queue[n].bytes;
      if (n > 0 && bytes + b > this.limits.bytes) break;
      bytes += b;
      n++;
    }
    return this.#queue.splice(0, n);
  }
}
