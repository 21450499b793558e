package io.fencekeeper.client;

import io.fencekeeper.v1.FenceMode;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.TxnOp;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A held lease: its fencing token, until when it may be assumed held, the moment it is lost as a
 * future, and the store's calls with the token attached.
 *
 * <p>A lease is lost the moment it can no longer be assumed held: no renewal was confirmed before
 * validUntil() (DEADLINE), the server says it is gone (NOT_FOUND), a write under its token was refused
 * (FENCED), or release() (RELEASED). Then lost() completes with a LeaseLostException, the loss listeners
 * run, and check(), isHeld() and every call through the lease say so. Every look at the lease
 * (check(), isHeld(), lost(), a call through it) looks at the clock first, so a process that was paused
 * past the deadline sees the loss on its first look, before any of its timers has run; without a look,
 * the client's keep-alive thread, whose one timer is armed for the earliest deadline, completes lost()
 * at the deadline. Call check() right before acting on the lease.
 *
 * <p>AutoCloseable: try-with-resources releases it.
 */
public final class Lease implements AutoCloseable {
  /** What a lease needs from the client that acquired it. */
  interface Context {
    Store store();
    /** The fence mode of writes through a lease when a call does not say. */
    FenceMode fenceMode();
    KeepAlive keepAlive();
    /** Whether anyone listens to events; events nobody reads are not even built. */
    boolean listening();
    void emit(ClientEvent event);
    /** Gives the lease up on the server, in the background; the future never fails. */
    CompletableFuture<Void> release(FencingToken token);
    /** Called once when the lease ends, whatever the cause. */
    void ended(Lease lease);
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final FencingToken token;
  private final Duration ttl;
  final Deadline deadline;
  private final Context ctx;
  private final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();
  private volatile LeaseLostException lostWith;
  private CompletableFuture<Void> ending = DONE; // guarded by this

  Lease(FencingToken token, Duration ttl, Deadline deadline, Context ctx) {
    this.token = token;
    this.ttl = ttl;
    this.deadline = deadline;
    this.ctx = ctx;
  }

  /** The fencing token: send it with every write, or let the calls of this lease do it. */
  public FencingToken token() {
    return token;
  }

  /** The TTL etcd granted. */
  public Duration ttl() {
    return ttl;
  }

  /** How often the lease is renewed: a third of its TTL. */
  Duration interval() {
    return ttl.dividedBy(3);
  }

  /** Until when the lease may be assumed held: the send time of the last confirmed renewal + TTL - drift margin. */
  public Instant validUntil() {
    return deadline.validUntil();
  }

  /** When the last renewal was confirmed (or the Acquire answered). */
  public Instant lastConfirmedAt() {
    return deadline.lastConfirmedAt();
  }

  /** Whether the lease may still be assumed held, by the clock right now. */
  public boolean isHeld() {
    return !expireIfPassed();
  }

  /** Throws the LeaseLostException once the lease is lost; call it right before acting on the lease. */
  public void check() {
    if (expireIfPassed()) throw lostWith;
  }

  /**
   * Completes with the LeaseLostException when the lease is lost (never exceptionally). A copy: completing
   * it changes nothing. To act at once on a loss, prefer addLossListener or check().
   */
  public CompletableFuture<LeaseLostException> lost() {
    expireIfPassed();
    return lost.copy();
  }

  /**
   * Runs listener once the lease is lost: at once (on this thread) if it is already, otherwise on the
   * thread that notices the loss (the keep-alive thread at the deadline, or a thread whose look found it
   * passed), right after the loss is decided: another thread's check() may throw a moment before the
   * listener has run. Keep it short and do not block in it; an exception it throws goes to its thread's
   * uncaught exception handler.
   */
  public void addLossListener(Consumer<LeaseLostException> listener) {
    expireIfPassed();
    lost.thenAccept(e -> {
      try {
        listener.accept(e);
      } catch (RuntimeException x) {
        Thread t = Thread.currentThread();
        t.getUncaughtExceptionHandler().uncaughtException(t, x);
      }
    });
  }

  /**
   * Gives the lease up: renewals stop, lost() completes (RELEASED), and the server is told, so that the
   * next waiter is granted now. Returns once the server answered or the call's deadline passed.
   * Idempotent; never throws: a lease the server cannot be told about ends at its TTL.
   */
  public void release() {
    lose(LossCause.RELEASED, null);
    CompletableFuture<Void> end;
    synchronized (this) {
      end = ending;
    }
    try {
      end.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      // release() never fails: see Context.release.
    }
  }

  /** release(). */
  @Override
  public void close() {
    release();
  }

  public Store.Commit put(String key, String value) {
    return put(key, value.getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT);
  }

  /** Writes key under this lease's token, after a look at the lease; mode: the client's unless o says. */
  public Store.Commit put(String key, byte[] value, WriteOptions o) {
    return write(() -> ctx.store().put(token, key, value, withMode(o)));
  }

  public Store.Commit delete(String key) {
    return delete(key, WriteOptions.DEFAULT);
  }

  public Store.Commit delete(String key, WriteOptions o) {
    return write(() -> ctx.store().delete(token, key, withMode(o)));
  }

  /** Several puts and deletes (Store.putOp, Store.deleteOp), all or nothing. */
  public Store.Commit txn(List<TxnOp> ops, WriteOptions o) {
    return write(() -> ctx.store().txn(token, ops, withMode(o)));
  }

  /** Reads a key of the resource, after a look at the lease. */
  public Store.Value get(String key) {
    check();
    return ctx.store().get(token.getResource(), key);
  }

  @Override
  public String toString() {
    return "Lease{" + token.getResource() + ":" + token.getGeneration() + ":" + token.getLeaseId() + (lostWith == null ? "" : " lost " + lostWith.why()) + "}";
  }

  private WriteOptions withMode(WriteOptions o) {
    return o.mode() != null ? o : o.withMode(ctx.fenceMode());
  }

  private Store.Commit write(Supplier<Store.Commit> call) {
    check();
    try {
      return call.get();
    } catch (StaleTokenException | LeaseNotHeldException e) {
      lose(LossCause.FENCED, e);
      throw e;
    }
  }

  /** Looks at the clock: the lease is lost once its deadline has passed. True once it has ended. */
  boolean expireIfPassed() {
    if (lostWith == null && deadline.passed()) lose(LossCause.DEADLINE, null);
    return lostWith != null;
  }

  /** A renewal sent at sentAt was answered at `at` with the TTL etcd granted. */
  void confirmed(Stamp sentAt, Duration granted, Stamp at) {
    if (lostWith != null) return;
    if (!deadline.confirm(sentAt, granted, at)) {
      lose(LossCause.DEADLINE, null);
      return;
    }
    if (ctx.listening()) {
      ctx.emit(new ClientEvent.Renewed(token, Instant.ofEpochMilli(sentAt.wallMillis()), Instant.ofEpochMilli(at.wallMillis()), granted, validUntil()));
    }
  }

  /** A renewal was answered with an error: NOT_FOUND ends the lease, anything else proves nothing. */
  void refused(FencekeeperException error) {
    if (lostWith != null) return;
    if (error instanceof LeaseNotFoundException) lose(LossCause.NOT_FOUND, error);
    else if (ctx.listening()) ctx.emit(new ClientEvent.RenewalFailed(token, error));
  }

  /** Ends the lease, once: renewals stop, the server is told unless it said the lease is gone, lost() completes. */
  void lose(LossCause why, Throwable cause) {
    LeaseLostException error;
    synchronized (this) {
      if (lostWith != null) return;
      error = new LeaseLostException(message(why, cause), why, token, deadline.validUntil(), deadline.lastConfirmedAt(), Instant.now(), cause);
      lostWith = error;
      // A lease the server says is gone needs no release; one past its deadline may still be held in etcd.
      ending = why == LossCause.NOT_FOUND ? DONE : ctx.release(token);
    }
    ctx.keepAlive().remove(this);
    ctx.ended(this);
    lost.complete(error);
    if (why == LossCause.RELEASED || why == LossCause.CANCELED) ctx.emit(new ClientEvent.Released(token));
    else ctx.emit(new ClientEvent.Lost(error));
  }

  private String message(LossCause why, Throwable cause) {
    String lease = "the lease on \"" + token.getResource() + "\" (generation " + token.getGeneration() + ")";
    return switch (why) {
      case DEADLINE -> lease + " is lost: no renewal was confirmed before its deadline " + deadline.validUntil();
      case NOT_FOUND -> lease + " is lost: the server says it expired or was released";
      case FENCED -> lease + " is lost: a write under its token was refused (" + cause.getMessage() + ")";
      case RELEASED -> lease + " was released";
      case CANCELED -> lease + " ended: its acquire was canceled";
    };
  }
}
