// How long to wait before reconnecting after the n-th failure in a row: at once after the first (another
// server may answer), then exponentially longer, with jitter, up to a cap.
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 100, maxMs: 2_000 };

export function backoffDelay(failures: number, o: BackoffOptions = DEFAULT_BACKOFF): number {
  if (failures <= 0) return 0;
  const ceiling = Math.min(o.maxMs, o.baseMs * 2 ** (failures - 1));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}
