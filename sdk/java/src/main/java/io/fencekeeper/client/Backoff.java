package io.fencekeeper.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How long to wait before reopening the KeepAlive stream after the n-th failure in a row: at once after
 * the first (another server may answer), then exponentially longer, with jitter, up to a cap.
 */
record Backoff(Duration base, Duration max) {
  static final Backoff DEFAULT = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2));

  Duration delay(int failures) {
    if (failures <= 0) return Duration.ZERO;
    long ceiling = Math.min(max.toMillis(), base.toMillis() << Math.min(failures - 1, 30));
    return Duration.ofMillis(ceiling / 2 + ThreadLocalRandom.current().nextLong(ceiling / 2 + 1));
  }
}
