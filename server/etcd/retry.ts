// Work that must happen once etcd answers again: tried now, then again with a growing pause while it
// fails, until it succeeds or there is no point any more.

/**
 * How long cleanup is retried. Not a lease's TTL: etcd renews every lease to its full TTL when it
 * restarts, so a lease that etcd could not revoke during an outage comes back with etcd, and must be
 * revoked then, however long the outage lasted.
 */
export const CLEANUP_GIVE_UP_MS = 3600_000;

/**
 * Runs attempt until it resolves, or until giveUpAfterMs have passed. Resolves once the first attempt
 * has settled (the retries go on in the background); never rejects.
 */
export function eventually(attempt: () => Promise<unknown>, giveUpAfterMs = CLEANUP_GIVE_UP_MS): Promise<void> {
  const giveUpAt = Date.now() + giveUpAfterMs;
  const run = (pauseMs: number): Promise<void> =>
    attempt().then(
      () => undefined,
      () => {
        if (Date.now() + pauseMs < giveUpAt) setTimeout(() => void run(Math.min(pauseMs * 2, 2000)), pauseMs).unref();
      },
    );
  return run(250);
}
