// The spans of revisions a resource's keys were there for, indexed by their first revision: "was one of
// them there at some revision between lo and hi" is answered by a binary search and a walk back over the
// spans that started last, not by a scan of all of them (a long run has tens of thousands a resource,
// and as many refusals to judge against them).

/** Revisions from (the first it was there at) to (the first it was not). */
export interface RevisionSpan {
  from: bigint;
  to: bigint;
}

export class SpanIndex<S extends RevisionSpan> {
  private readonly spans: S[];
  /** maxTo[i]: the latest end among spans[0..i]. */
  private readonly maxTo: bigint[];

  constructor(spans: Iterable<S>) {
    this.spans = [...spans].sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : 0));
    this.maxTo = [];
    for (const [i, s] of this.spans.entries()) this.maxTo.push(i === 0 || s.to > this.maxTo[i - 1] ? s.to : this.maxTo[i - 1]);
  }

  /**
   * A span there at some revision from lo to hi (from <= hi and to > lo) for which which() holds, the
   * one that started last; undefined when there is none.
   */
  find(lo: bigint, hi: bigint, which: (s: S) => boolean = () => true): S | undefined {
    // The last span that started at or before hi.
    let a = 0;
    let b = this.spans.length;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (this.spans[mid].from <= hi) a = mid + 1;
      else b = mid;
    }
    // Back from there, while some span at or before this one is still there after lo.
    for (let i = a - 1; i >= 0 && this.maxTo[i] > lo; i--) {
      const s = this.spans[i];
      if (s.to > lo && which(s)) return s;
    }
    return undefined;
  }
}
