package io.fencekeeper.integrations;

import io.fencekeeper.client.Lease;
import io.fencekeeper.client.Token;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/**
 * The lease of the innermost lock this thread holds through one of the integrations (a ShedLock task run
 * by a LockingTaskExecutor or {@code @SchedulerLock}, or a Spring Integration lock this thread locked), so
 * that the guarded code, which the frameworks hand no lock object, reaches its fencing token:
 * <pre>{@code Token t = CurrentLease.token().orElseThrow(); // send it with every write the lock guards
 * CurrentLease.get().orElseThrow().put("out/report", body);  // or write through the lease itself}</pre>
 * Empty on a thread that holds none. A lease found here may be lost already: {@code check()} it, or let a
 * write through it be refused.
 */
public final class CurrentLease {
  private static final ThreadLocal<Deque<Lease>> HELD = ThreadLocal.withInitial(ArrayDeque::new);

  private CurrentLease() {}

  /** The lease of the innermost lock held by this thread, lost or not. */
  public static Optional<Lease> get() {
    return Optional.ofNullable(HELD.get().peekLast());
  }

  /** Its fencing token. */
  public static Optional<Token> token() {
    return get().map(Lease::token);
  }

  /** The lock's lease is in force on this thread from now on: called by the thread that took the lock. */
  public static void enter(Lease lease) {
    HELD.get().addLast(lease);
  }

  /**
   * It is no longer: called by the thread that took the lock as it gives it up. Removes the last entry of
   * that lease (a lock taken twice on one thread is entered twice), wherever it is, so that locks given up
   * out of order leave the others in place.
   */
  public static void leave(Lease lease) {
    Deque<Lease> held = HELD.get();
    held.removeLastOccurrence(lease);
    if (held.isEmpty()) HELD.remove();
  }
}
