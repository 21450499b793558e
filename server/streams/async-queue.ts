// The server's queue for streams: one side pushes, the other reads an async iterable that ends once
// close() is called and what was pushed is read, or fails with fail()'s error after it. Unbounded: its
// users bound what they push (KeepAlive reads no further request at its bound). It feeds etcd's watches
// (etcd/reader.ts), KeepAlive's answers (api/keepalive.ts) and the health Watch (health/health-service.ts).
// It knows nothing of etcd or gRPC: a folder of its own, below all three, which import it downward.

export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiting?: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void };
  private done = false;
  private error?: unknown;
  private ended!: () => void;
  /** Resolves once the queue is closed or failed. */
  readonly closed = new Promise<void>((resolve) => (this.ended = resolve));

  push(item: T): void {
    if (this.done) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w.resolve({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.ended();
    this.waiting?.resolve({ value: undefined, done: true });
    this.waiting = undefined;
  }

  fail(err: unknown): void {
    if (this.done) return;
    this.done = true;
    this.ended();
    this.error = err;
    this.waiting?.reject(err);
    this.waiting = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.error !== undefined) return Promise.reject(this.error);
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
