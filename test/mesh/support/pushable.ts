// The sending side of a client stream in a test: push requests whenever the test wants, end when done.
export class Pushable<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake?: () => void;
  private ended = false;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

/** Reads a server stream into an array as it arrives; done settles with the stream's end or error. */
export function collect<T>(stream: AsyncIterable<T>): { items: T[]; done: Promise<unknown> } {
  const items: T[] = [];
  const done = (async () => {
    for await (const item of stream) items.push(item);
  })().then(
    () => undefined,
    (err: unknown) => err,
  );
  return { items, done };
}
