// Reading a server stream in a test while it goes on. (The sending side of a client stream is the
// client's own queue, client/async-queue.ts.)
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
