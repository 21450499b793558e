// The queue between an Observe stream's watch and its reader (server/streams/coalescing-queue.ts): what
// waits is bounded by the stream's bytes and its caller's; past either, the waiting items are dropped
// and the reader gets the newest, marked missed; a reader that never reads holds one item however many
// are pushed; the pool counts only what waits.
import { expect } from "chai";
import { BufferPool, CallerBuffers, CoalescingQueue, type Coalesced } from "../../server/streams/coalescing-queue.js";

const size = (n: number) => n;

async function take<T>(q: CoalescingQueue<T>, count: number): Promise<Coalesced<T>[]> {
  const it = q[Symbol.asyncIterator]();
  const out: Coalesced<T>[] = [];
  for (let i = 0; i < count; i++) out.push((await it.next()).value as Coalesced<T>);
  return out;
}

describe("the coalescing queue of a stream whose reader may fall behind", () => {
  it("keeps items in order while they fit, and hands a waiting reader the next at once", async () => {
    const pool = new BufferPool(1000);
    const q = new CoalescingQueue<number>(100, pool, size);
    q.push(10);
    q.push(20);
    expect(q.bufferedBytes).to.equal(30);
    expect(pool.inUse).to.equal(30);
    expect(await take(q, 2)).to.deep.equal([
      { item: 10, missed: false },
      { item: 20, missed: false },
    ]);
    expect(pool.inUse).to.equal(0);
    const next = take(q, 1);
    q.push(7);
    expect(await next).to.deep.equal([{ item: 7, missed: false }]);
  });

  it("past its bytes, drops what waits and keeps only the newest, handed out marked missed; then queues again", async () => {
    const pool = new BufferPool(1000);
    const q = new CoalescingQueue<number>(100, pool, size);
    for (const n of [40, 40, 40, 41, 42, 43]) q.push(n);
    expect(q.drops).to.equal(1);
    expect(q.bufferedBytes).to.equal(0);
    expect(pool.inUse).to.equal(0);
    expect(await take(q, 1)).to.deep.equal([{ item: 43, missed: true }]);
    q.push(5);
    expect(await take(q, 1)).to.deep.equal([{ item: 5, missed: false }]);
  });

  it("a reader that never reads holds one item whatever is pushed", () => {
    const pool = new BufferPool(1000);
    const q = new CoalescingQueue<number>(100, pool, size);
    for (let i = 0; i < 10_000; i++) q.push(60);
    expect(q.bufferedBytes).to.be.at.most(100);
    expect(pool.inUse).to.be.at.most(100);
    q.close();
    expect(pool.inUse).to.equal(0);
  });

  it("the streams of one caller share its pool: one stream's backlog leaves less for the others", async () => {
    const buffers = new CallerBuffers(100);
    const a = buffers.open("alice");
    const b = buffers.open("alice");
    expect(a.pool).to.equal(b.pool);
    const qa = new CoalescingQueue<number>(80, a.pool, size);
    const qb = new CoalescingQueue<number>(80, b.pool, size);
    qa.push(70);
    qb.push(40); // 110 > the caller's 100: qb drops and keeps the newest
    expect(qb.drops).to.equal(1);
    expect(await take(qb, 1)).to.deep.equal([{ item: 40, missed: true }]);
    expect(a.pool.inUse).to.equal(70);
    expect(buffers.open("bob").pool).to.not.equal(a.pool);
    a.close();
    b.close();
    expect(buffers.open("alice").pool).to.not.equal(a.pool, "a caller's pool goes with its last stream");
  });
});
