package io.fencekeeper.integrations.shedlock;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.ResourceHeldException;
import io.fencekeeper.integrations.CurrentLease;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;

/**
 * A ShedLock {@link net.javacrumbs.shedlock.core.LockProvider} on fencekeeper leases: each lock name is the
 * resource {@code prefix + name}, taken without waiting (held elsewhere: the task is skipped, as with every
 * ShedLock provider) on a lease of its own that the client keeps alive while the task runs.
 *
 * <ul>
 *   <li><b>lockAtMostFor</b> bounds the lease's TTL ({@code min(lockAtMostFor, maxTtl)}, at least the 2 s etcd
 *       grants), and the lease is released when it has passed, so that another node may run the task then
 *       even if this one still runs it, as ShedLock promises; a write of the overrunning task is refused.</li>
 *   <li><b>lockAtLeastFor</b>: an unlock before it has passed keeps the lease, renewed, until then.</li>
 *   <li>A node that dies or pauses loses the lock when its lease ends (its TTL), not after lockAtMostFor.
 *       The lost lease's token is refused by the fenced store once the next holder has written.</li>
 *   <li>The guarded code finds the lease with {@link CurrentLease#get()} and its token with
 *       {@link CurrentLease#token()}.</li>
 * </ul>
 */
public final class FencekeeperLockProvider implements ExtensibleLockProvider, AutoCloseable {
  /** The longest TTL asked for by default: a dead node's lock passes on within it. */
  public static final Duration DEFAULT_MAX_TTL = Duration.ofSeconds(10);
  /** etcd grants whole seconds, at least two. */
  private static final Duration MIN_TTL = Duration.ofSeconds(2);

  private final FencekeeperClient client;
  private final String prefix;
  private final Duration maxTtl;
  // Ends leases at lockAtMostFor, and after lockAtLeastFor for tasks that unlocked early.
  private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "fencekeeper-shedlock-timer");
    t.setDaemon(true);
    return t;
  });

  /** Resources {@code "shedlock/" + name}, TTLs of at most {@link #DEFAULT_MAX_TTL}. */
  public FencekeeperLockProvider(FencekeeperClient client) {
    this(client, "shedlock/", DEFAULT_MAX_TTL);
  }

  /**
   * @param prefix put before each lock name to make its resource
   * @param maxTtl the longest lease TTL asked for; a shorter lockAtMostFor asks for less
   */
  public FencekeeperLockProvider(FencekeeperClient client, String prefix, Duration maxTtl) {
    this.client = Objects.requireNonNull(client, "client");
    this.prefix = Objects.requireNonNull(prefix, "prefix");
    if (maxTtl.compareTo(MIN_TTL) < 0) throw new IllegalArgumentException("maxTtl must be at least 2 s");
    this.maxTtl = maxTtl;
  }

  @Override
  public Optional<SimpleLock> lock(LockConfiguration config) {
    Duration ttl = config.getLockAtMostFor();
    if (ttl.compareTo(maxTtl) > 0) ttl = maxTtl;
    if (ttl.compareTo(MIN_TTL) < 0) ttl = MIN_TTL;
    Lease lease;
    try {
      lease = client.acquire(prefix + config.getName(), AcquireOptions.ttl(ttl).noWait());
    } catch (ResourceHeldException held) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
    FencedSimpleLock lock = new FencedSimpleLock(config, lease, Thread.currentThread());
    CurrentLease.enter(lease);
    lock.endAt(config.getLockAtMostUntil());
    return Optional.of(lock);
  }

  /** Stops the timers. Leases still held (tasks running, lockAtLeastFor not passed) end with the client. */
  @Override
  public void close() {
    timers.shutdownNow();
  }

  /** A lock taken through this provider: its lease, and so its token. */
  public final class FencedSimpleLock extends AbstractSimpleLock {
    private final Lease lease;
    private final Thread owner;
    private ScheduledFuture<?> end;

    FencedSimpleLock(LockConfiguration config, Lease lease, Thread owner) {
      super(config);
      this.lease = lease;
      this.owner = owner;
    }

    /** The lease the lock is held by; {@code lease().token()} is its fencing token. */
    public Lease lease() {
      return lease;
    }

    /** Releases the lease at {@code at} (at once if it has passed), in place of any end set before. */
    synchronized void endAt(Instant at) {
      if (end != null) end.cancel(false);
      long delay = Math.max(0, Duration.between(ClockProvider.now(), at).toMillis());
      end = delay == 0 ? null : timers.schedule(lease::release, delay, TimeUnit.MILLISECONDS);
      if (end == null) lease.release();
    }

    @Override
    protected void doUnlock() {
      if (Thread.currentThread() == owner) CurrentLease.leave(lease);
      // The task is done: the lease stays until lockAtLeastFor has passed (a lost one is already gone).
      endAt(lockConfiguration.getLockAtLeastUntil());
    }

    /**
     * ShedLock's LockExtender: the same lease, to a new lockAtMostFor from now (its TTL stays as granted);
     * empty once the lease is lost, as a lock that cannot be extended.
     */
    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration config) {
      if (!lease.isHeld()) return Optional.empty();
      FencedSimpleLock next = new FencedSimpleLock(config, lease, owner);
      synchronized (this) {
        if (end != null) end.cancel(false);
      }
      next.endAt(config.getLockAtMostUntil());
      return Optional.of(next);
    }
  }
}
