// The two queues that feed streams: the server's (server/streams/async-queue.ts: etcd's watches, KeepAlive's
// answers, the health Watch) and the client's (client/async-queue.ts: the requests of a KeepAlive stream,
// also what tests send on client streams). What their users rely on: order, a reader woken by a push, an
// end once what was pushed is read, the server's failure after its items, and an early end by the reader.
import { expect } from "chai";
import { AsyncQueue as ServerQueue } from "../../server/streams/async-queue.js";
import { AsyncQueue as ClientQueue } from "../../client/async-queue.js";

/** Reads the whole stream: its items, and the error it ended with, if any. */
async function drain<T>(stream: AsyncIterable<T>): Promise<{ items: T[]; error?: unknown }> {
  const items: T[] = [];
  try {
    for await (const item of stream) items.push(item);
    return { items };
  } catch (error) {
    return { items, error };
  }
}

/** Lets every pending callback and timer of this turn run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("the stream queues", () => {
  for (const [name, make] of [
    ["server", () => new ServerQueue<number>()],
    ["client", () => new ClientQueue<number>()],
  ] as const) {
    describe(`the ${name}'s`, () => {
      it("gives what was pushed before and while it is read, in order, and ends after it once closed", async () => {
        const q = make();
        q.push(1);
        q.push(2);
        const read = drain(q);
        await settle();
        q.push(3);
        await settle();
        q.push(4);
        q.close();
        expect(await read).to.deep.equal({ items: [1, 2, 3, 4] });
      });

      it("wakes a reader that waits, and ends it at close", async () => {
        const q = make();
        const it = q[Symbol.asyncIterator]();
        const first = it.next();
        await settle();
        q.push(7);
        expect(await first).to.deep.equal({ value: 7, done: false });
        const second = it.next();
        await settle();
        q.close();
        expect((await second).done).to.equal(true);
      });

      it("takes nothing once closed", async () => {
        const q = make();
        q.push(1);
        q.close();
        q.push(2);
        expect(await drain(q)).to.deep.equal({ items: [1] });
      });
    });
  }

  describe("the server's, besides", () => {
    it("fails after the items pushed before the failure, and takes nothing after it", async () => {
      const q = new ServerQueue<number>();
      const boom = new Error("etcd went away");
      q.push(1);
      q.push(2);
      q.fail(boom);
      q.push(3);
      q.close();
      expect(await drain(q)).to.deep.equal({ items: [1, 2], error: boom });
    });

    it("rejects a reader that waits when it fails", async () => {
      const q = new ServerQueue<number>();
      const waiting = q[Symbol.asyncIterator]().next();
      await settle();
      const boom = new Error("watch cancelled");
      q.fail(boom);
      let caught: unknown;
      await waiting.catch((err: unknown) => (caught = err));
      expect(caught).to.equal(boom);
    });

    it("says when it is closed, failed, or its reader stops early", async () => {
      const states: string[] = [];
      const closed = new ServerQueue<number>();
      const failed = new ServerQueue<number>();
      const left = new ServerQueue<number>();
      void closed.closed.then(() => states.push("closed"));
      void failed.closed.then(() => states.push("failed"));
      void left.closed.then(() => states.push("left"));
      await settle();
      expect(states).to.deep.equal([]);
      closed.close();
      failed.fail(new Error("x"));
      left.push(1);
      left.push(2);
      for await (const item of left) {
        expect(item).to.equal(1);
        break; // the reader's return() closes the queue
      }
      await settle();
      expect(states).to.deep.equal(["closed", "failed", "left"]);
      left.push(3);
      expect(await drain(left)).to.deep.equal({ items: [2] });
    });
  });
});
