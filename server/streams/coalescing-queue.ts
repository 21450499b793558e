// The queue between a stream's source and its reader when the reader may fall behind: the source never
// waits (an etcd watch must be drained as fast as it delivers, or etcd's client buffers it all), and
// what waits for the reader is bounded in bytes, per stream and per caller. Past the bound, what waits
// is dropped, and the reader's next item is the newest one, marked as following dropped ones (as etcd
// tells a watcher that fell behind compaction that it missed revisions). Meanwhile each new item
// replaces that newest one: a reader that never reads costs one item, whatever the source sends.
//
// Each item's bytes count from its push until it is handed to the reader; the HTTP/2 stream then holds
// at most the one message being written (connect waits for the stream to drain before the next).

/** Bytes shared by all the streams of one caller: a stream takes before it keeps an item, gives back after. */
export class BufferPool {
  private used = 0;
  constructor(readonly limit: number) {}
  take(bytes: number): boolean {
    if (this.used + bytes > this.limit) return false;
    this.used += bytes;
    return true;
  }
  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
  get inUse(): number {
    return this.used;
  }
}

export interface Coalesced<T> {
  item: T;
  /** Items before this one were dropped. */
  missed: boolean;
}

export class CoalescingQueue<T> implements AsyncIterable<Coalesced<T>> {
  private readonly items: { item: T; bytes: number }[] = [];
  private queued = 0;
  /** Set once items were dropped: the newest item, handed out next with missed set. */
  private newest?: { item: T };
  private waiting?: (r: IteratorResult<Coalesced<T>>) => void;
  private done = false;
  /** How many times items were dropped, for metrics and tests. */
  drops = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly pool: BufferPool,
    private readonly sizeOf: (item: T) => number,
  ) {}

  push(item: T): void {
    if (this.done) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: { item, missed: false }, done: false });
      return;
    }
    if (this.newest) {
      this.newest = { item };
      return;
    }
    const bytes = this.sizeOf(item);
    if (this.queued + bytes > this.maxBytes || !this.pool.take(bytes)) {
      // Behind by more than the bound: drop what waits, keep only the newest.
      this.drops++;
      this.release();
      this.newest = { item };
      return;
    }
    this.items.push({ item, bytes });
    this.queued += bytes;
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.release();
    this.newest = undefined;
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
  }

  /** Bytes waiting for the reader now. */
  get bufferedBytes(): number {
    return this.queued;
  }

  private release(): void {
    this.pool.give(this.queued);
    this.items.length = 0;
    this.queued = 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<Coalesced<T>> {
    return {
      next: () => {
        const first = this.items.shift();
        if (first) {
          this.queued -= first.bytes;
          this.pool.give(first.bytes);
          return Promise.resolve({ value: { item: first.item, missed: false }, done: false });
        }
        if (this.newest) {
          const { item } = this.newest;
          this.newest = undefined;
          return Promise.resolve({ value: { item, missed: true }, done: false });
        }
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiting = resolve));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/** One BufferPool per caller, kept while any of its streams is open. */
export class CallerBuffers {
  private readonly pools = new Map<string, { pool: BufferPool; streams: number }>();
  constructor(private readonly limit: number) {}

  /** The caller's pool, and the function that lets go of it when the stream ends. */
  open(caller: string): { pool: BufferPool; close: () => void } {
    let entry = this.pools.get(caller);
    if (!entry) this.pools.set(caller, (entry = { pool: new BufferPool(this.limit), streams: 0 }));
    entry.streams++;
    let closed = false;
    return {
      pool: entry.pool,
      close: () => {
        if (closed) return;
        closed = true;
        if (--entry.streams === 0) this.pools.delete(caller);
      },
    };
  }
}
