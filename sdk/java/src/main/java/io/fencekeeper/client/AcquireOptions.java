package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;

/**
 * How to acquire: the lease's TTL (etcd grants whole seconds, at least 2 s; default 10 s), whether to
 * wait in line when the resource is held (no: fail with ResourceHeldException; forever; or at most
 * waitLimit, then DeadlineExceededException), the holder label (null: the client's), and the lock-delay
 * (zero: none; see docs/lock-delay.md: if the lease expires rather than being released, nobody is granted
 * the resource for that long; such a lease is always one of its own, also with sessions), and whether the
 * acquisition is shared (docs/shared-leases.md: held beside other shared ones while no exclusive one holds
 * or waits; its token's mode is ACQUIRE_MODE_SHARED and the fenced store refuses its writes), the value
 * published with it (docs/election.md; empty: none), and maxHolders (docs/semaphores.md: a permit of a
 * counting semaphore of that many, shared; 0: no cap), and whether it preempts (docs/preemption.md: takes
 * the resource from whoever holds it, at once, ahead of the waiters; the old holder's writes are refused
 * from then on and its lease is lost, LossCause.PREEMPTED, at its next renewal; needs the policy verb
 * preempt or admin; exclusive, on a lease of its own, without a lock-delay; never waits), and whether it
 * takes an etcd lease of its own rather than the client's session (ownLease: null, not chosen, is no for
 * acquire, acquireAll and semaphore and yes for campaign; see withOwnLease).
 * <pre>{@code AcquireOptions.ttl(Duration.ofSeconds(5)).waitAtMost(Duration.ofSeconds(30))}</pre>
 */
public record AcquireOptions(Duration ttl, Boolean waiting, Duration waitLimit, String holder, Duration lockDelay, boolean shared, ByteString value, int maxHolders, boolean preempt, Boolean ownLease) {
  public static final Duration DEFAULT_TTL = Duration.ofSeconds(10);

  /**
   * waiting: true (waitForever, waitAtMost), false (noWait), or null: not chosen, which acquire takes as no
   * waiting and semaphore and campaign as waiting forever. An explicit noWait is kept by every entry point.
   */
  public AcquireOptions {
    Objects.requireNonNull(ttl, "ttl");
    Objects.requireNonNull(lockDelay, "lockDelay");
    Objects.requireNonNull(value, "value");
    if (maxHolders < 0) throw new IllegalArgumentException("maxHolders must not be negative");
    if (waitLimit != null && (!Boolean.TRUE.equals(waiting) || waitLimit.isNegative())) throw new IllegalArgumentException("waitLimit needs waiting, and must not be negative");
  }

  /** TTL 10 s, waiting left to the entry point (acquire: no), the client's holder label, no lock-delay, exclusive. */
  public static AcquireOptions defaults() {
    return new AcquireOptions(DEFAULT_TTL, null, null, null, Duration.ZERO, false, ByteString.EMPTY, 0, false, null);
  }

  /** Whether it waits in line: only if waitForever or waitAtMost was chosen. */
  public boolean waits() {
    return Boolean.TRUE.equals(waiting);
  }

  /** Whether the caller chose (waitForever, waitAtMost or noWait) rather than leaving it to the entry point. */
  public boolean waitChosen() {
    return waiting != null;
  }

  public static AcquireOptions ttl(Duration ttl) {
    return defaults().withTtl(ttl);
  }

  public AcquireOptions withTtl(Duration ttl) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** Fail fast with ResourceHeldException when the resource is held (acquire's default; semaphore and campaign keep it too). */
  public AcquireOptions noWait() {
    return new AcquireOptions(ttl, false, null, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** Wait in line until granted, or until the acquire is canceled (its future, or an interrupt). */
  public AcquireOptions waitForever() {
    return new AcquireOptions(ttl, true, null, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** Wait in line at most this long, then fail with DeadlineExceededException. */
  public AcquireOptions waitAtMost(Duration limit) {
    return new AcquireOptions(ttl, true, limit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  public AcquireOptions withHolder(String holder) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** The lock-delay (whole seconds, rounded up by the server; zero: none). */
  public AcquireOptions withLockDelay(Duration lockDelay) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** A shared acquisition (true) or an exclusive one (false, the default). */
  public AcquireOptions withShared(boolean shared) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** The value published with the acquisition (Describe, Observe; Leadership.proclaim changes it). */
  public AcquireOptions withValue(ByteString value) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  public AcquireOptions withValue(String value) {
    return withValue(ByteString.copyFrom(value, StandardCharsets.UTF_8));
  }

  /** A permit of a counting semaphore of n (implies shared); 0: no cap. See FencekeeperClient.semaphore. */
  public AcquireOptions withMaxHolders(int n) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, n, preempt, ownLease);
  }

  /** Take the resource from whoever holds it (true), or not (false, the default). */
  public AcquireOptions withPreempt(boolean preempt) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /**
   * On an etcd lease of its own (true) rather than the client's session of that TTL (false), on a client
   * with sessions (the default): for a TTL whose fate is its own, or a holder that must lose this lock
   * without losing the others, or learn at its next renewal that it was released behind its back
   * (docs/client.md, "Sessions"). A lock-delay or a preemption always takes a lease of its own. Not
   * chosen: no, except for campaign, which takes a lease of its own unless told false.
   */
  public AcquireOptions withOwnLease(boolean ownLease) {
    return new AcquireOptions(ttl, waiting, waitLimit, holder, lockDelay, shared, value, maxHolders, preempt, ownLease);
  }

  /** Whether it asks for a lease of its own (withOwnLease(true)). */
  public boolean onOwnLease() {
    return Boolean.TRUE.equals(ownLease);
  }
}
