package io.fencekeeper.client;

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
 * <p>On a session (FencekeeperClient.Builder.sessions) the lease has its own token, loss signal,
 * release() and writes, but the session's deadline: validUntil(), lastConfirmedAt() and ttl() are the
 * session's, and the session's loss (DEADLINE, NOT_FOUND) is the loss of every lease on it, at once.
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
    CompletableFuture<Void> release(Token token);
    /** Called once when the lease ends, whatever the cause. */
    void ended(Lease lease);
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final Token token;
  private final Duration ttl;
  final Deadline deadline;
  /** What the KeepAlive stream renews for this lease: itself (Own), or its session. */
  final KeepAlive.Kept keeper;
  /** Null: a lease of its own. */
  private final Session session;
  private final Context ctx;
  private final CompletableFuture<LeaseLostException> lost = new CompletableFuture<>();
  private volatile LeaseLostException lostWith;
  private CompletableFuture<Void> ending = DONE; // guarded by this

  /** A lease of its own, kept alive by its own renewals. */
  /** Acquired with a lock-delay (set before the lease is renewed or returned): lost at its deadline, it is left to expire. */
  volatile boolean lockDelay;

  Lease(Token token, Duration ttl, Deadline deadline, Context ctx) {
    this.token = token;
    this.ttl = ttl;
    this.deadline = deadline;
    this.keeper = new Own();
    this.session = null;
    this.ctx = ctx;
  }

  /** A lease on a session: the session's renewals keep it alive. Session.attach it next. */
  Lease(Token token, Session session, Context ctx) {
    this.token = token;
    this.ttl = session.ttl();
    this.deadline = session.deadline();
    this.keeper = session;
    this.session = session;
    this.ctx = ctx;
  }

  /** The lease as the KeepAlive stream renews it, when it has an etcd lease of its own. */
  private final class Own implements KeepAlive.Kept {
    @Override public long id() { return token.getLeaseId(); }
    @Override public Duration interval() { return Lease.this.interval(); }
    @Override public Deadline deadline() { return deadline; }
    @Override public boolean expireIfPassed() { return Lease.this.expireIfPassed(); }
    @Override public void confirmed(Stamp sentAt, Duration granted, Stamp at) { Lease.this.confirmed(sentAt, granted, at); }
    @Override public void refused(FencekeeperException error) { Lease.this.refused(error); }
  }

  /** The fencing token: send it with every write, or let the calls of this lease do it. */
  public Token token() {
    return token;
  }

  /** The TTL etcd granted (on a session: the session's). */
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

  /** Whether the lease is on a session rather than on an etcd lease of its own. */
  public boolean onSession() {
    return session != null;
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
    // Decided lost: completed now, even in the moment between the decision (end) and the completion of
    // the shared future, so that lost() after isHeld() said false is always done.
    LeaseLostException decided;
    synchronized (this) {
      decided = lostWith;
    }
    return decided != null ? CompletableFuture.completedFuture(decided) : lost.copy();
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

  /** A call under the lease: checked first; refused as stale (STALE_TOKEN, LEASE_NOT_HELD), it ends the lease. */
  <T> T write(Supplier<T> call) {
    check();
    try {
      return call.get();
    } catch (StaleTokenException | LeaseNotHeldException e) {
      lose(LossCause.FENCED, e);
      throw e;
    }
  }

  /**
   * Looks at the clock: the lease is lost once its deadline has passed. On a session, the session looks,
   * and a lease that finds it ended ends with it (also while the session is still ending the others, so
   * that no look finds a lease held once its session is lost). True once the lease has ended.
   */
  boolean expireIfPassed() {
    if (lostWith != null) return true;
    if (session != null) {
      if (session.expireIfPassed()) endWithSession();
    } else if (deadline.passed()) {
      lose(LossCause.DEADLINE, null);
    }
    return lostWith != null;
  }

  /** The lease's session ended: the lease ends with it, for the same reason; the session's close is its cleanup. */
  void endWithSession() {
    end(session.endedWith(), session.cause(), session.cleaned());
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
    else if (error instanceof PreemptedException) lose(LossCause.PREEMPTED, error);
    else if (ctx.listening()) ctx.emit(new ClientEvent.RenewalFailed(token, error));
  }

  /**
   * Ends the lease on its own, once: renewals stop (on a session: the session lives on without it), the
   * server is told unless it said the lease is gone, lost() completes.
   */
  void lose(LossCause why, Throwable cause) {
    end(why, cause, null);
  }

  /** Ends the lease, once; cleanup: the session's close when the lease ends with its session, else null. */
  private void end(LossCause why, Throwable cause, CompletableFuture<Void> cleanup) {
    LeaseLostException error;
    synchronized (this) {
      if (lostWith != null) return;
      error = new LeaseLostException(message(why, cause, cleanup != null), why, token, deadline.validUntil(), deadline.lastConfirmedAt(), Instant.now(), cause);
      lostWith = error;
      // A lease the server says is gone needs no release; one past its deadline may still be held in etcd,
      // and is released then, unless it has a lock-delay: releasing would end, without the delay, a lease
      // whose writes sent before the deadline may still be on their way, which is what the delay is for.
      boolean left = why == LossCause.NOT_FOUND || why == LossCause.PREEMPTED || (why == LossCause.DEADLINE && lockDelay);
      ending = cleanup != null ? cleanup : left ? DONE : ctx.release(token);
    }
    if (session == null) ctx.keepAlive().remove(keeper);
    else if (cleanup == null) session.detach(this);
    ctx.ended(this);
    lost.complete(error);
    if (why == LossCause.RELEASED || why == LossCause.CANCELED) ctx.emit(new ClientEvent.Released(token));
    else ctx.emit(new ClientEvent.Lost(error));
  }

  private String message(LossCause why, Throwable cause, boolean withSession) {
    String lease = "the lease on \"" + token.getResource() + "\" (generation " + token.getGeneration()
        + (withSession ? ", on session " + token.getLeaseId() + ", which ended" : "") + ")";
    return switch (why) {
      case DEADLINE -> lease + " is lost: no renewal was confirmed before its deadline " + deadline.validUntil();
      case NOT_FOUND -> lease + " is lost: the server says it expired or was released";
      case PREEMPTED -> {
        PreemptedException p = cause instanceof PreemptedException e ? e : null;
        String by = p != null && p.byPrincipal() != null && !p.byPrincipal().isEmpty() ? " by \"" + p.byPrincipal() + "\"" : "";
        String now = p != null && p.byGeneration() != null && p.byGeneration() > 0 ? " (now generation " + p.byGeneration() + ")" : "";
        yield lease + " is lost: it was preempted" + by + now + "; its writes are refused";
      }
      case FENCED -> lease + " is lost: a write under its token was refused (" + cause.getMessage() + ")";
      case RELEASED -> lease + " was released";
      case CANCELED -> lease + " ended: its acquire was canceled";
    };
  }
}
