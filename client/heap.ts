// A binary min-heap whose items know their own place in it, so that an item can be moved or taken out
// in O(log n) without a search and without allocating: the keepalive scheduler keeps every lease in two
// of them (by when its next renewal is due, and by its deadline).
export interface Slot<T> {
  /** The item's index in the heap, or -1 when it is not in it. */
  get(item: T): number;
  set(item: T, index: number): void;
}

export class IndexedHeap<T> {
  private readonly items: T[] = [];

  constructor(
    private readonly key: (item: T) => number,
    private readonly slot: Slot<T>,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  has(item: T): boolean {
    return this.slot.get(item) >= 0;
  }

  push(item: T): void {
    if (this.has(item)) return this.update(item);
    this.items.push(item);
    this.slot.set(item, this.items.length - 1);
    this.up(this.items.length - 1);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Takes an item out; nothing happens if it is not in. */
  remove(item: T): void {
    const i = this.slot.get(item);
    if (i < 0) return;
    this.slot.set(item, -1);
    const last = this.items.pop()!;
    if (i === this.items.length) return;
    this.items[i] = last;
    this.slot.set(last, i);
    this.down(i);
    this.up(i);
  }

  /** Puts an item whose key changed back in its place (or in the heap, if it was not in it). */
  update(item: T): void {
    const i = this.slot.get(item);
    if (i < 0) return this.push(item);
    this.down(i);
    this.up(i);
  }

  clear(): void {
    for (const item of this.items) this.slot.set(item, -1);
    this.items.length = 0;
  }

  private up(i: number): void {
    const { items, key } = this;
    const item = items[i];
    const k = key(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (key(items[parent]) <= k) break;
      items[i] = items[parent];
      this.slot.set(items[i], i);
      i = parent;
    }
    items[i] = item;
    this.slot.set(item, i);
  }

  private down(i: number): void {
    const { items, key } = this;
    const n = items.length;
    const item = items[i];
    const k = key(item);
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && key(items[right]) < key(items[left]) ? right : left;
      if (key(items[child]) >= k) break;
      items[i] = items[child];
      this.slot.set(items[i], i);
      i = child;
    }
    items[i] = item;
    this.slot.set(item, i);
  }
}
