// setTimeout for any delay: Node's timers take at most 2^31-1 ms (about 24.8 days) and fire after 1 ms
// beyond that, with a warning. Longer delays are waited in steps.

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls fn at the time `at` (ms since the epoch); returns the function that cancels it. */
export function atTime(at: number, fn: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = at - Date.now();
    if (left <= 0) return fn();
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
  };
  arm();
  return () => clearTimeout(timer);
}
