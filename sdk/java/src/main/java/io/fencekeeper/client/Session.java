package io.fencekeeper.client;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A session (FencekeeperClient.Builder.sessions): one etcd lease that many acquisitions share, as etcd's
 * concurrency.Session and Chubby's sessions. The KeepAlive stream renews the session, not its leases; its
 * deadline is theirs. When it is lost (its deadline passed, or the server says it is gone) every lease
 * on it is lost with it, at once; a lease that ends on its own (released, fenced, canceled) leaves the
 * session to the others. It stays open, and renewed, until the client closes.
 */
final class Session implements KeepAlive.Kept {
  /** What a session needs from the client that opened it. */
  interface Host {
    KeepAlive keepAlive();
    /** Closes the session on the server, in the background; the future never fails. */
    CompletableFuture<Void> close(long sessionId);
    /** The session ended: the next acquisition of its TTL opens a new one. */
    void forget(Session session);
    boolean listening();
    void emit(ClientEvent event);
  }

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final long id;
  private final Duration ttl;
  private final Deadline deadline;
  private final Host host;
  private final Set<Lease> leases = new HashSet<>(); // guarded by this
  private LossCause ended; // guarded by this
  private Throwable cause; // guarded by this
  private CompletableFuture<Void> cleaned = DONE; // guarded by this

  Session(long id, Duration ttl, Deadline deadline, Host host) {
    this.id = id;
    this.ttl = ttl;
    this.deadline = deadline;
    this.host = host;
  }

  @Override
  public long id() {
    return id;
  }

  Duration ttl() {
    return ttl;
  }

  @Override
  public Duration interval() {
    return ttl.dividedBy(3);
  }

  @Override
  public Deadline deadline() {
    return deadline;
  }

  /** Takes lease on. A session that has ended takes none: a lease attached too late is lost with it at once. */
  void attach(Lease lease) {
    synchronized (this) {
      if (ended == null) {
        leases.add(lease);
        return;
      }
    }
    lease.endWithSession();
  }

  /** A lease on the session ended on its own (released, fenced, canceled); the session lives on. */
  synchronized void detach(Lease lease) {
    leases.remove(lease);
  }

  @Override
  public boolean expireIfPassed() {
    if (deadline.passed()) lose(LossCause.DEADLINE, null);
    synchronized (this) {
      return ended != null;
    }
  }

  /** Why the session ended (null while it has not), what caused it, and its cleanup on the server. */
  synchronized LossCause endedWith() {
    return ended;
  }

  synchronized Throwable cause() {
    return cause;
  }

  synchronized CompletableFuture<Void> cleaned() {
    return cleaned;
  }

  @Override
  public void confirmed(Stamp sentAt, Duration granted, Stamp at) {
    int count;
    synchronized (this) {
      if (ended != null) return;
      count = leases.size();
    }
    if (!deadline.confirm(sentAt, granted, at)) {
      lose(LossCause.DEADLINE, null);
      return;
    }
    if (host.listening()) {
      host.emit(new ClientEvent.SessionRenewed(id, Instant.ofEpochMilli(sentAt.wallMillis()), Instant.ofEpochMilli(at.wallMillis()), granted,
          deadline.validUntil(), count));
    }
  }

  @Override
  public void refused(FencekeeperException error) {
    if (error instanceof LeaseNotFoundException) lose(LossCause.NOT_FOUND, error);
    else if (error instanceof PreemptedException) lose(LossCause.PREEMPTED, error);
    else if (host.listening()) host.emit(new ClientEvent.RenewalFailed(null, error));
  }

  /**
   * Ends the session, lost (DEADLINE, NOT_FOUND) or closed (RELEASED, by the client's close()), and every
   * lease on it. Past its deadline the session may still be alive in etcd: it is closed, so that its
   * resources pass to the next in line at once.
   */
  void lose(LossCause why, Throwable error) {
    List<Lease> on;
    synchronized (this) {
      if (ended != null) return;
      ended = why;
      cause = error;
      on = new ArrayList<>(leases);
      leases.clear();
      cleaned = why == LossCause.NOT_FOUND || why == LossCause.PREEMPTED ? DONE : host.close(id);
    }
    host.keepAlive().remove(this);
    host.forget(this);
    host.emit(new ClientEvent.SessionEnded(id, why, on.size()));
    for (Lease lease : on) lease.endWithSession();
  }
}
