// KeepAlive's pace under load (server/budgets/load-gauge.ts, keepalive-pace.ts): the gauge shrinks the
// share while the loop is saturated and gives it back once it has room; the share slows the callers that
// send more than it leaves them, never one that sends little, and never a caller alone. A caller is
// present from its calls of the last second or two (presence.ts), not only from the streams it holds.
import { expect } from "chai";
import type { EventLoopUtilization } from "node:perf_hooks";
import { KeepAlivePace } from "../../server/budgets/keepalive-pace.js";
import { LoadGauge, MIN_SHARE } from "../../server/budgets/load-gauge.js";
import { CallerPresence } from "../../server/budgets/presence.js";

const ELU: EventLoopUtilization = { idle: 0, active: 0, utilization: 0 };

/** A gauge driven by the utilizations the test gives it. */
function gauge(): { g: LoadGauge; busy(u: number, ticks: number): void } {
  let next = 0;
  const g = new LoadGauge(() => ({ now: ELU, busy: next }));
  g.stop(); // ticked by hand
  return {
    g,
    busy(u, ticks) {
      next = u;
      for (let i = 0; i < ticks; i++) g.tick();
    },
  };
}

/** How many of n messages of one renewal each a new stream of caller is let in at once; the stream stays open. */
function letIn(pace: KeepAlivePace, caller: string, n: number): { count: number; close(): void } {
  const budget = pace.keepAliveBudget(caller);
  let count = 0;
  for (; count < n; count++) {
    if (budget.admit(1) !== undefined) break;
    budget.answered(1);
  }
  return { count, close: () => budget.close() };
}

describe("KeepAlive pace under load", () => {
  it("the gauge shrinks the share while the loop is saturated, to no less than its floor, and gives it back once it has room", () => {
    const { g, busy } = gauge();
    expect(g.share()).to.equal(1);
    busy(0.8, 10);
    expect(g.share(), "between the thresholds: unchanged").to.equal(1);
    busy(0.97, 3);
    expect(g.share()).to.be.below(0.5);
    busy(1, 100);
    expect(g.share()).to.equal(MIN_SHARE);
    busy(0.5, 100);
    expect(g.share()).to.equal(1);
  });

  it("a loaded loop slows the caller that sends much, not one that sends little, and not a caller alone", () => {
    const { g, busy } = gauge();
    busy(1, 100); // the smallest share: 1,000 a second × 0.01 = 10, bursts of 20
    const pace = new KeepAlivePace({ streamMessagesPerSecond: 1000 }, g);
    const alone = letIn(pace, "alone", 500);
    expect(alone.count, "a caller alone keeps its whole burst").to.equal(500);
    alone.close();
    const bystander = letIn(pace, "bystander", 5); // two callers now: the share applies
    const flooder = letIn(pace, "flooder", 500);
    expect(bystander.count, "a bystander's few messages").to.equal(5);
    expect(flooder.count, "the flooder, at the shrunk burst").to.be.at.most(20);
    const more = letIn(pace, "bystander", 5);
    expect(more.count, "the bystander again").to.equal(5);
    for (const s of [bystander, flooder, more]) s.close();
  });

  it("a loaded loop also shrinks the renewals a contended caller keeps in flight, to no fewer than 100", () => {
    const { g, busy } = gauge();
    const pace = new KeepAlivePace({ streamMessagesPerSecond: 100_000, renewalsInFlight: 4_000 }, g);
    const bystander = pace.keepAliveBudget("bystander");
    /** Renewals a new stream of the flooder has let in at once, in messages of 50, none answered. */
    const inFlight = () => {
      const flooder = pace.keepAliveBudget("flooder");
      let n = 0;
      while (n < 200 && flooder.admit(50) === undefined) n++;
      flooder.close();
      return n * 50;
    };
    expect(inFlight(), "with room: the whole bound").to.equal(4_000);
    busy(1, 100);
    expect(inFlight(), "saturated: the floor").to.equal(100);
    expect(bystander.admit(1), "the bystander's renewal goes in").to.equal(undefined);
    bystander.close();
  });

  it("a caller that holds no stream but made calls lately counts: the flooder alone on streams is slowed beside it", () => {
    const { g, busy } = gauge();
    busy(1, 100);
    let now = 0;
    const presence = new CallerPresence(() => now);
    const pace = new KeepAlivePace({ streamMessagesPerSecond: 1000 }, g, presence);
    /** Messages a new stream of the flooder is let in at once. */
    const flood = () => {
      const s = letIn(pace, "flooder", 500);
      s.close();
      return s.count;
    };
    presence.seen("flooder"); // its streams' start
    expect(flood(), "nobody else lately: the flooder's whole burst").to.equal(500);
    now = 5_000;
    presence.seen("bystander"); // a unary Renew, no stream
    expect(flood(), "a bystander's call a moment ago: the shrunk burst").to.be.at.most(20);
    now = 8_000; // the bystander silent for 3 s: the flooder is alone again
    expect(flood()).to.equal(500);
  });

  it("presence keeps two callers a window whatever their number, and forgets a window after the next", () => {
    let now = 0;
    const p = new CallerPresence(() => now);
    expect(p.several()).to.equal(false);
    for (let i = 0; i < 10_000; i++) p.seen("a");
    expect(p.several(), "one caller, however many calls").to.equal(false);
    expect(p.several("b"), "one caller and another with streams open").to.equal(true);
    expect(p.several("a")).to.equal(false);
    now = 1_500;
    p.seen("b");
    expect(p.several(), "a in the window before, b in this one").to.equal(true);
    now = 2_600;
    expect(p.several(), "a's window is gone: b alone").to.equal(false);
    now = 10_000;
    expect(p.several("c"), "nobody for long: only the one with streams").to.equal(false);
    for (let i = 0; i < 1_000; i++) p.seen(`caller ${i}`);
    expect(p.several()).to.equal(true);
    expect((p as unknown as { current: string[] }).current.length, "at most two kept").to.equal(2);
  });
});
