package io.fencekeeper.integrations.spring;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.DeadlineExceededException;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.ResourceHeldException;
import io.fencekeeper.client.Token;
import io.fencekeeper.integrations.CurrentLease;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;

/**
 * A Spring Integration {@link org.springframework.integration.support.locks.LockRegistry} on fencekeeper
 * leases, as the Redis and JDBC registries are on their stores: {@code obtain(key)} gives one
 * {@link FencedLock} per key, a {@link java.util.concurrent.locks.Lock} held across processes by a lease on
 * the resource {@code prefix + key}, which the client keeps alive while the lock is held.
 *
 * <ul>
 *   <li>Reentrant on the thread that holds it, and only that thread may unlock it
 *       ({@link IllegalStateException} otherwise); threads of one process queue on a local lock first.</li>
 *   <li>{@code lock()} waits in line at the server; {@code tryLock()} does not wait;
 *       {@code tryLock(time, unit)} waits at most that long. {@link DistributedLock#lock(Duration)} and
 *       {@link DistributedLock#tryLock(Duration, Duration)} choose the lease TTL of one acquisition.</li>
 *   <li>Loss: a lease that ended while the lock was held (a pause past its TTL, the server saying it is
 *       gone) makes {@code unlock()} throw {@link ConcurrentModificationException}, as the Redis and JDBC
 *       registries do for a lock that expired in their store; its writes through the lease are refused
 *       from the loss on, and its token by the fenced store once the next holder has written.
 *       {@link FencedLock#lost()} tells at once.</li>
 *   <li>The guarded code reaches the token with {@link FencedLock#token()} or {@link CurrentLease#token()}.</li>
 * </ul>
 */
public final class FencekeeperLockRegistry implements ExpirableLockRegistry<FencekeeperLockRegistry.FencedLock> {
  private final FencekeeperClient client;
  private final String prefix;
  private final Duration ttl;
  private final Map<String, FencedLock> locks = new ConcurrentHashMap<>();

  /** Resources {@code "spring/" + key}, leases of the client's default TTL (10 s). */
  public FencekeeperLockRegistry(FencekeeperClient client) {
    this(client, "spring/", AcquireOptions.DEFAULT_TTL);
  }

  /**
   * @param prefix put before each key to make its resource
   * @param ttl the lease TTL of each acquisition (etcd grants whole seconds, at least 2): a holder that
   *     dies or pauses loses the lock within it
   */
  public FencekeeperLockRegistry(FencekeeperClient client, String prefix, Duration ttl) {
    this.client = Objects.requireNonNull(client, "client");
    this.prefix = Objects.requireNonNull(prefix, "prefix");
    this.ttl = Objects.requireNonNull(ttl, "ttl");
  }

  @Override
  public FencedLock obtain(Object lockKey) {
    String key = Objects.requireNonNull(lockKey, "lockKey").toString();
    return locks.computeIfAbsent(key, k -> new FencedLock(prefix + k));
  }

  /** Forgets the locks nobody holds that were last taken more than age ms ago (obtain makes them anew). */
  @Override
  public void expireUnusedOlderThan(long age) {
    long now = System.currentTimeMillis();
    locks.values().removeIf(l -> !l.local.isLocked() && now - l.lastUsed > age);
  }

  /** A lock of this registry: a lease on its resource while held. */
  public final class FencedLock implements DistributedLock {
    private final String resource;
    private final ReentrantLock local = new ReentrantLock(true);
    private volatile Lease lease;
    private volatile long lastUsed = System.currentTimeMillis();

    FencedLock(String resource) {
      this.resource = resource;
    }

    /** The resource its lease is on. */
    public String resource() {
      return resource;
    }

    /** The lease while this lock is held (by any thread of this process), else null. */
    public Lease lease() {
      return lease;
    }

    /** The fencing token of the current hold; IllegalStateException when not held. */
    public Token token() {
      Lease l = lease;
      if (l == null) throw new IllegalStateException("the lock on " + resource + " is not held");
      return l.token();
    }

    /** Whether it is held here and its lease may still be assumed held (by the clock now). */
    public boolean isHeld() {
      Lease l = lease;
      return l != null && l.isHeld();
    }

    /** Completes when the lease of the current hold is lost (also by unlock); IllegalStateException when not held. */
    public CompletableFuture<LeaseLostException> lost() {
      Lease l = lease;
      if (l == null) throw new IllegalStateException("the lock on " + resource + " is not held");
      return l.lost();
    }

    @Override
    public void lock() {
      lock(ttl);
    }

    @Override
    public void lock(Duration ttl) {
      local.lock();
      if (local.getHoldCount() > 1) return;
      boolean interrupted = false;
      try {
        while (true) {
          try {
            took(client.acquire(resource, AcquireOptions.ttl(ttl).waitForever()));
            return;
          } catch (InterruptedException e) {
            interrupted = true; // lock() is not interruptible: wait on, and leave the flag set
          }
        }
      } catch (RuntimeException e) {
        local.unlock();
        throw e;
      } finally {
        if (interrupted) Thread.currentThread().interrupt();
      }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      local.lockInterruptibly();
      if (local.getHoldCount() > 1) return;
      try {
        took(client.acquire(resource, AcquireOptions.ttl(ttl).waitForever()));
      } catch (InterruptedException | RuntimeException e) {
        local.unlock();
        throw e;
      }
    }

    @Override
    public boolean tryLock() {
      if (!local.tryLock()) return false;
      if (local.getHoldCount() > 1) return true;
      try {
        took(client.acquire(resource, AcquireOptions.ttl(ttl).noWait()));
        return true;
      } catch (ResourceHeldException held) {
        local.unlock();
        return false;
      } catch (InterruptedException e) {
        local.unlock();
        Thread.currentThread().interrupt();
        return false;
      } catch (RuntimeException e) {
        local.unlock();
        throw e;
      }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      return tryLock(Duration.ofNanos(unit.toNanos(time)), ttl);
    }

    @Override
    public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
      long deadline = System.nanoTime() + waitTime.toNanos();
      if (!local.tryLock(waitTime.toNanos(), TimeUnit.NANOSECONDS)) return false;
      if (local.getHoldCount() > 1) return true;
      long left = deadline - System.nanoTime();
      try {
        AcquireOptions o = AcquireOptions.ttl(ttl);
        took(client.acquire(resource, left > 0 ? o.waitAtMost(Duration.ofNanos(left)) : o.noWait()));
        return true;
      } catch (ResourceHeldException | DeadlineExceededException notInTime) {
        local.unlock();
        return false;
      } catch (InterruptedException | RuntimeException e) {
        local.unlock();
        throw e;
      }
    }

    private void took(Lease l) {
      lease = l;
      lastUsed = System.currentTimeMillis();
      CurrentLease.enter(l);
    }

    /**
     * Gives the lock up (the lease is released when the outermost hold ends). Throws
     * IllegalStateException on a thread that does not hold it, and ConcurrentModificationException when its
     * lease was lost while held: another process may have held the lock meanwhile.
     */
    @Override
    public void unlock() {
      if (!local.isHeldByCurrentThread()) throw new IllegalStateException("the lock on " + resource + " is not held by this thread");
      if (local.getHoldCount() > 1) {
        local.unlock();
        return;
      }
      Lease l = lease;
      try {
        lease = null;
        CurrentLease.leave(l);
        boolean held = l.isHeld();
        l.release();
        if (!held) {
          LeaseLostException why = l.lost().join();
          throw new ConcurrentModificationException("the lease of the lock on " + resource + " was lost while held (" + why.why()
              + "): another process may have held the lock meanwhile, and writes fenced by token generation "
              + l.token().getGeneration() + " are refused once a newer holder has written", why);
        }
      } finally {
        local.unlock();
      }
    }

    /** Not supported, as by the Redis and JDBC registries: a condition cannot span processes. */
    @Override
    public Condition newCondition() {
      throw new UnsupportedOperationException("conditions are not supported by fencekeeper locks");
    }

    @Override
    public String toString() {
      Lease l = lease;
      return "FencedLock[" + resource + (l == null ? ", unlocked]" : ", " + l + "]");
    }
  }
}
