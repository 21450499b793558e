package io.fencekeeper.client;

import java.time.Duration;
import java.time.Instant;
import java.util.function.UnaryOperator;

/**
 * How long a lease may be assumed held: from the moment a renewal (or the Acquire) was SENT, plus the
 * TTL etcd granted, minus a drift margin. An answer proves the lease was renewed at some point after it
 * was sent, so counting from the send is safe however long the answer took; counting from its arrival
 * is not. Once the deadline has passed nothing extends it: a late answer is never read as continued
 * ownership. Guarded by the lease that owns it.
 */
final class Deadline {
  /** The default drift margin: 100 ms plus 1% of the TTL. */
  static Duration defaultDrift(Duration ttl) {
    return Duration.ofMillis(100).plus(ttl.dividedBy(100));
  }

  private final UnaryOperator<Duration> drift;
  private long monoNanos;
  private long wallMillis;
  private long confirmedWallMillis;

  Deadline(Stamp sentAt, Duration ttl, Stamp answeredAt, UnaryOperator<Duration> drift) {
    this.drift = drift;
    Duration valid = ttl.minus(drift.apply(ttl));
    monoNanos = sentAt.monoNanos() + valid.toNanos();
    wallMillis = sentAt.wallMillis() + valid.toMillis();
    confirmedWallMillis = answeredAt.wallMillis();
  }

  /**
   * Takes in a renewal sent at sentAt and answered at `at` with ttl. Returns false, and changes nothing,
   * if the deadline had already passed when the answer came.
   */
  synchronized boolean confirm(Stamp sentAt, Duration ttl, Stamp at) {
    if (at.monoNanos() - monoNanos >= 0 || at.wallMillis() >= wallMillis) return false;
    Duration valid = ttl.minus(drift.apply(ttl));
    long mono = sentAt.monoNanos() + valid.toNanos();
    if (mono - monoNanos > 0) monoNanos = mono;
    wallMillis = Math.max(wallMillis, sentAt.wallMillis() + valid.toMillis());
    confirmedWallMillis = at.wallMillis();
    return true;
  }

  /** Whether the deadline has passed, by either clock, now. */
  synchronized boolean passed() {
    return System.nanoTime() - monoNanos >= 0 || System.currentTimeMillis() >= wallMillis;
  }

  /** Nanoseconds left, by the clock that leaves the least; 0 or less once passed. */
  synchronized long nanosLeft() {
    return Math.min(monoNanos - System.nanoTime(), (wallMillis - System.currentTimeMillis()) * 1_000_000);
  }

  /** The deadline as a wall-clock instant. */
  Instant validUntil() {
    return Instant.ofEpochMilli(System.currentTimeMillis()).plusNanos(nanosLeft());
  }

  /** When the last confirmation (or the Acquire's answer) arrived. */
  synchronized Instant lastConfirmedAt() {
    return Instant.ofEpochMilli(confirmedWallMillis);
  }
}
