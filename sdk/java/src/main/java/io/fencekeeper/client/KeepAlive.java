package io.fencekeeper.client;

import com.google.protobuf.Duration;
import io.fencekeeper.v1.KeepAliveRequest;
import io.fencekeeper.v1.KeepAliveResponse;
import io.fencekeeper.v1.LeaseRenewal;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One KeepAlive stream per client, carrying the renewals of every lease it holds, and one thread that
 * decides when each is renewed and when each is lost.
 *
 * <p>Each lease is renewed every third of its TTL. There is no timer per lease: one timer is armed for
 * the earliest deadline or due renewal of all of them. When it fires, leases whose deadline has passed
 * are given up first (a renewal sent after the deadline could prove nothing), then every renewal due
 * within the next BATCH_WINDOW goes out in one KeepAliveRequest (lease_ids, up to 10,000 per message),
 * all with the one send time from which each lease's deadline counts once its answer confirms it. (The
 * TypeScript client keeps the leases in two heaps; a scan costs little for the hundreds of leases a
 * Java process holds, and keeps this short.)
 *
 * <p>An answer is matched to the lease's unanswered renewal on the same stream (at most one at a time);
 * an answer that arrives after the deadline proves nothing. A stream that fails, ends, or leaves a
 * renewal unanswered for a whole renewal interval while answering nothing else in that time (a hung
 * server or connection) is dropped and opened again, on the next server, after a backoff; the renewals
 * it left unanswered go out again on the new one. A server that goes on answering, only slowly, keeps
 * its stream: a new one would queue behind the renewals it still works on.
 *
 * <p>Everything here runs on the one thread ("fencekeeper-keepalive"); gRPC's callbacks hand over to it.
 */
final class KeepAlive implements AutoCloseable {
  /** Renewals due within this long of the one that woke the thread go out with it, a little early. */
  private static final long BATCH_WINDOW = TimeUnit.MILLISECONDS.toNanos(50);
  /** After an answer that proves nothing, try again this soon (or at the renewal interval, if sooner). */
  private static final long RETRY = TimeUnit.MILLISECONDS.toNanos(200);
  /** How often a renewal unanswered for a whole interval is looked at again, while its stream answers others. */
  private static final long RECHECK = TimeUnit.MILLISECONDS.toNanos(100);
  /** The most lease ids the server takes in one KeepAliveRequest. */
  private static final int MAX_IDS_PER_MESSAGE = 10_000;

  private static final class Entry {
    final Lease lease;
    final long interval;
    /** When the next renewal is due (System.nanoTime). */
    long nextAt;
    /** The unanswered renewal: when it was sent (shared by its whole message), and on which stream. */
    Stamp sentAt;
    Stream sentOn;

    Entry(Lease lease, long nextAt) {
      this.lease = lease;
      this.interval = lease.interval().toNanos();
      this.nextAt = nextAt;
    }
  }

  private static final class Stream {
    final String url;
    /** When an answer last arrived on it, or when it opened (System.nanoTime). */
    volatile long answeredAt = System.nanoTime();
    StreamObserver<KeepAliveRequest> requests;

    Stream(String url) {
      this.url = url;
    }
  }

  private final Servers servers;
  private final Backoff backoff;
  private final Consumer<ClientEvent> emit;
  private final boolean listening;
  private final ScheduledThreadPoolExecutor thread;
  private final Map<Long, Entry> entries = new HashMap<>();
  private ScheduledFuture<?> timer;
  /** When the timer fires (System.nanoTime). */
  private long armedAt;
  private Stream stream;
  private ScheduledFuture<?> reconnect;
  private int failures;

  KeepAlive(Servers servers, Backoff backoff, Consumer<ClientEvent> emit, boolean listening) {
    this.servers = servers;
    this.backoff = backoff;
    this.emit = emit;
    this.listening = listening;
    thread = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "fencekeeper-keepalive");
      t.setDaemon(true);
      return t;
    });
    thread.setRemoveOnCancelPolicy(true);
  }

  /** Keeps lease alive from now on; its first renewal is due at firstAt (System.nanoTime). */
  void add(Lease lease, long firstAt) {
    post(() -> {
      entries.put(lease.token().getLeaseId(), new Entry(lease, firstAt));
      arm();
    });
  }

  /** Stops renewing a lease. The stream closes with the last one. */
  void remove(Lease lease) {
    post(() -> {
      Entry e = entries.get(lease.token().getLeaseId());
      if (e == null || e.lease != lease) return;
      entries.remove(lease.token().getLeaseId());
      if (entries.isEmpty()) stop();
    });
  }

  @Override
  public void close() {
    post(() -> {
      entries.clear();
      stop();
    });
    thread.shutdown();
  }

  private void post(Runnable task) {
    try {
      thread.execute(task);
    } catch (RejectedExecutionException e) {
      // Closed: nothing is kept any more.
    }
  }

  /** Arms the one timer for the earliest deadline or due renewal (renewals wait while a reconnection is pending). */
  private void arm() {
    long now = System.nanoTime();
    long next = Long.MAX_VALUE;
    boolean any = false;
    for (Entry e : entries.values()) {
      long at = now + e.lease.deadline.nanosLeft();
      if (reconnect == null && e.nextAt - at < 0) at = e.nextAt;
      if (!any || at - next < 0) next = at;
      any = true;
    }
    if (!any) {
      disarm();
      return;
    }
    if (timer != null && armedAt - next <= 0) return;
    disarm();
    armedAt = next;
    timer = thread.schedule(this::run, Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS);
  }

  private void disarm() {
    if (timer != null) timer.cancel(false);
    timer = null;
  }

  private void run() {
    disarm();
    // Deadlines first: a lease whose deadline passed is lost, whatever a renewal sent now would answer.
    entries.values().removeIf(e -> e.lease.expireIfPassed());
    if (entries.isEmpty()) {
      stop();
      return;
    }
    long soon = System.nanoTime() + BATCH_WINDOW;
    if (reconnect == null && entries.values().stream().anyMatch(e -> e.nextAt - soon <= 0)) flush();
    arm();
  }

  /** Sends every renewal due within the batch window, in as few messages as the limit allows. */
  private void flush() {
    Stream s = stream != null ? stream : open();
    Stamp sentAt = Stamp.now();
    long until = sentAt.monoNanos() + BATCH_WINDOW;
    List<Long> ids = new ArrayList<>();
    Entry hung = null;
    for (Iterator<Entry> it = entries.values().iterator(); it.hasNext(); ) {
      Entry e = it.next();
      if (e.nextAt - until > 0) continue;
      // Also by the wall clock, which orders deadlines differently only after it was stepped.
      if (e.lease.expireIfPassed()) {
        it.remove();
        continue;
      }
      if (e.sentOn == s && e.sentAt != null) {
        // Its last renewal on this stream is unanswered: the next one waits for it. Past a whole renewal
        // interval the stream may be hung (failIfHung); look again shortly, until it answers or is dropped.
        if (sentAt.monoNanos() - e.sentAt.monoNanos() >= e.interval) {
          if (hung == null) hung = e;
          e.nextAt = sentAt.monoNanos() + RECHECK;
        } else {
          e.nextAt = e.sentAt.monoNanos() + e.interval;
        }
        continue;
      }
      e.sentAt = sentAt;
      e.sentOn = s;
      e.nextAt = sentAt.monoNanos() + e.interval;
      ids.add(e.lease.token().getLeaseId());
      if (ids.size() == MAX_IDS_PER_MESSAGE) {
        send(s, ids);
        ids = new ArrayList<>();
      }
    }
    if (!ids.isEmpty()) send(s, ids);
    if (hung != null) {
      Entry h = hung;
      // After what has already arrived is handed over: this process's own lag is no reason to drop a stream.
      post(() -> failIfHung(s, h));
    }
  }

  /**
   * Gives the stream up if e's renewal is still unanswered a whole renewal interval after it was sent,
   * and nothing at all has been answered on the stream for as long: the server or the connection is
   * hung, and another server (or a new connection) may answer in time.
   */
  private void failIfHung(Stream s, Entry e) {
    if (stream != s || e.sentOn != s || e.sentAt == null) return;
    long now = System.nanoTime();
    if (now - e.sentAt.monoNanos() < e.interval || now - s.answeredAt < e.interval) return;
    fail(s, new IllegalStateException("no answer to a renewal of lease " + e.lease.token().getLeaseId() + " within "
        + TimeUnit.NANOSECONDS.toMillis(e.interval) + " ms"), true);
  }

  private void send(Stream s, List<Long> ids) {
    try {
      s.requests.onNext(KeepAliveRequest.newBuilder().addAllLeaseIds(ids).build());
    } catch (RuntimeException e) {
      fail(s, e, false);
      return;
    }
    if (listening) emit.accept(new ClientEvent.KeepAliveSent(s.url, ids.size()));
  }

  private Stream open() {
    Stream s = new Stream(servers.current());
    stream = s;
    s.requests = LeaseServiceGrpc.newStub(servers.channel(Servers.Use.STREAM, s.url)).keepAlive(new StreamObserver<>() {
      @Override
      public void onNext(KeepAliveResponse answer) {
        Stamp at = Stamp.now();
        s.answeredAt = at.monoNanos();
        post(() -> answer(s, answer, at));
      }

      @Override
      public void onError(Throwable error) {
        post(() -> fail(s, error, false));
      }

      @Override
      public void onCompleted() {
        post(() -> fail(s, new IllegalStateException("the server ended the KeepAlive stream"), false));
      }
    });
    emit.accept(new ClientEvent.StreamOpened(s.url));
    return s;
  }

  private void answer(Stream s, KeepAliveResponse answer, Stamp at) {
    if (stream != s) return;
    failures = 0;
    if (answer.getRenewalsCount() > 0) {
      for (LeaseRenewal r : answer.getRenewalsList()) {
        answer(s, r.getLeaseId(), r.hasTtl() ? r.getTtl() : null, r.hasError() ? r.getError() : null, at);
      }
    } else {
      answer(s, answer.getLeaseId(), answer.hasTtl() ? answer.getTtl() : null, answer.hasError() ? answer.getError() : null, at);
    }
    arm();
  }

  private void answer(Stream s, long leaseId, Duration ttl, com.google.rpc.Status error, Stamp at) {
    Entry e = entries.get(leaseId);
    if (e == null || e.sentOn != s || e.sentAt == null) return;
    Stamp sentAt = e.sentAt;
    e.sentAt = null;
    e.sentOn = null;
    if (error != null) {
      e.lease.refused(Errors.from(error));
      e.nextAt = at.monoNanos() + Math.min(RETRY, e.interval);
    } else if (ttl != null) {
      e.lease.confirmed(sentAt, java.time.Duration.ofSeconds(ttl.getSeconds(), ttl.getNanos()), at);
    }
  }

  /** Drops a stream that failed; the renewals it left unanswered go out again on the next one. */
  private void fail(Stream s, Throwable error, boolean hung) {
    if (stream != s) return;
    stream = null;
    cancel(s, error);
    // A hung connection may be a dead one: the next attempt on that server opens a fresh connection.
    if (hung) servers.reset(Servers.Use.STREAM, s.url);
    servers.failed(s.url);
    long now = System.nanoTime();
    for (Entry e : entries.values()) {
      if (e.sentOn != s) continue;
      e.sentAt = null;
      e.sentOn = null;
      e.nextAt = now;
    }
    if (entries.isEmpty()) return;
    java.time.Duration retryIn = backoff.delay(failures++);
    emit.accept(new ClientEvent.StreamFailed(s.url, error, retryIn));
    reconnect = thread.schedule(() -> {
      reconnect = null;
      if (!entries.isEmpty() && stream == null) open();
      run();
    }, retryIn.toNanos(), TimeUnit.NANOSECONDS);
    arm();
  }

  private void stop() {
    disarm();
    if (reconnect != null) reconnect.cancel(false);
    reconnect = null;
    Stream s = stream;
    stream = null;
    if (s != null) cancel(s, null);
  }

  private static void cancel(Stream s, Throwable cause) {
    if (s.requests instanceof ClientCallStreamObserver<KeepAliveRequest> call) call.cancel("the client dropped the KeepAlive stream", cause);
  }
}
