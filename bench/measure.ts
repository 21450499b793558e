// Closed-loop load: N workers, each starting its next operation as soon as the last one answered, for a
// fixed time. Throughput counts operations that answered within the window; latency is per operation.
// Bounded: a worker starts nothing after the window, and an operation that never answers is given up
// on after a grace period, so a stuck peer cannot hang the run.

export interface Measurement {
  workers: number;
  /** Operations that answered without an error. */
  ops: number;
  errors: number;
  /** The first error's message, to say why a row is wrong. */
  firstError?: string;
  /** Operations still unanswered when the grace period ran out. */
  stuck: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
}

export interface MeasureOptions {
  workers: number;
  seconds: number;
  /** One operation of worker w, its i-th; i is -1 for the warm-up call. */
  op: (worker: number, i: number) => Promise<unknown>;
  /** How long an operation may still run after the window before it counts as stuck. Default 30 s. */
  graceSeconds?: number;
  /** One call per worker before the window, to open connections and warm up code paths. Default true. */
  warmUp?: boolean;
}

/** Sorted latencies in ms and the time they were measured over; kept apart so that runs can be merged. */
export interface Samples {
  latencies: number[];
  ops: number;
  errors: number;
  firstError?: string;
  stuck: number;
  seconds: number;
}

export async function measure(o: MeasureOptions): Promise<Measurement> {
  return summarize(o.workers, await sample(o));
}

export async function sample(o: MeasureOptions): Promise<Samples> {
  const grace = (o.graceSeconds ?? 30) * 1000;
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const fail = (err: unknown) => {
    errors++;
    firstError ??= err instanceof Error ? err.message : String(err);
  };
  if (o.warmUp ?? true) {
    // A warm-up failure is not counted: if it persists, the window shows it.
    await bounded(Promise.all(Array.from({ length: o.workers }, (_, w) => o.op(w, -1).catch(() => undefined))), grace);
  }
  let inFlight = 0;
  const started = performance.now();
  const end = started + o.seconds * 1000;
  const workers = Array.from({ length: o.workers }, async (_, w) => {
    for (let i = 0; performance.now() < end; i++) {
      const t = performance.now();
      inFlight++;
      try {
        await o.op(w, i);
        latencies.push(performance.now() - t);
      } catch (err) {
        fail(err);
        // A failing peer answers at once; do not spin on it.
        await new Promise((r) => setTimeout(r, 10));
      } finally {
        inFlight--;
      }
    }
  });
  const finished = await bounded(Promise.all(workers), end - performance.now() + grace);
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { latencies, ops: latencies.length, errors, firstError, stuck: finished ? 0 : inFlight, seconds };
}

/** Merges samples of the same work measured in several rounds. */
export function merge(all: Samples[]): Samples {
  const latencies = all.flatMap((s) => s.latencies).sort((a, b) => a - b);
  return {
    latencies,
    ops: latencies.length,
    errors: all.reduce((n, s) => n + s.errors, 0),
    firstError: all.find((s) => s.firstError)?.firstError,
    stuck: all.reduce((n, s) => n + s.stuck, 0),
    seconds: all.reduce((n, s) => n + s.seconds, 0),
  };
}

export function summarize(workers: number, s: Samples): Measurement {
  return {
    workers,
    ops: s.ops,
    errors: s.errors,
    ...(s.firstError !== undefined ? { firstError: s.firstError } : {}),
    stuck: s.stuck,
    seconds: round(s.seconds, 3),
    perSecond: round(s.ops / s.seconds, 1),
    p50Ms: round(percentile(s.latencies, 50), 3),
    p99Ms: round(percentile(s.latencies, 99), 3),
  };
}

/** The p-th percentile of sorted values (nearest rank); NaN when there are none. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((sorted.length * p) / 100) - 1))];
}

/** Runs fn over items with at most `limit` at a time; stops starting new ones after `deadline` (performance.now() ms). */
export async function pool<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>, deadline = Infinity): Promise<{ done: number; failed: number; firstError?: string }> {
  let next = 0;
  let done = 0;
  let failed = 0;
  let firstError: string | undefined;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length && performance.now() < deadline) {
        const index = next++;
        try {
          await fn(items[index], index);
          done++;
        } catch (err) {
          failed++;
          firstError ??= err instanceof Error ? err.message : String(err);
        }
      }
    }),
  );
  return { done, failed, firstError };
}

/** Whether the promise settled within ms; it is left running otherwise. */
export async function bounded(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function round(x: number, digits: number): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
