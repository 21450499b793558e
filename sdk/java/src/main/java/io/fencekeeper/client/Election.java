package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.fencekeeper.v1.ProclaimRequest;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Leader election on top of leases (docs/election.md): a campaign is an exclusive acquire that waits in
 * line and publishes a value; the leader is the exclusive holder; followers observe it. lead() is the loop
 * of client-go's leaderelection. The leadership's loss signal is the lease's: it completes at validUntil
 * (the send time of the last confirmed renewal + TTL - drift margin), before etcd can expire the lease and
 * grant anyone else. FencekeeperClient's campaign, leader, observeLeaders and lead are the entry points.
 */
public final class Election {
  private Election() {}

  /** The leader of a resource as followers see it: its holder label, its token, and the value it published. */
  public record Leader(String holder, Token token, ByteString value) {}

  /** One change observeLeaders gives: a new leader, a new value of the same one, or none (leader null). */
  public record LeaderChange(Leader leader, long revision) {}

  /** An elected campaign: the leader's lease (its writes go under the leader's token). */
  public static final class Leadership {
    private final FencekeeperClient client;
    private final Lease lease;

    Leadership(FencekeeperClient client, Lease lease) {
      this.client = client;
      this.lease = lease;
    }

    public Lease lease() {
      return lease;
    }

    public Token token() {
      return lease.token();
    }

    /** Whether it may still assume it leads, by the clock right now: look right before acting. */
    public boolean isLeading() {
      return lease.isHeld();
    }

    /** Throws the LeaseLostException once it no longer leads. */
    public void check() {
      lease.check();
    }

    /** Completes with the LeaseLostException once this process can no longer assume it leads. */
    public CompletableFuture<LeaseLostException> lost() {
      return lease.lost();
    }

    /**
     * Publishes a new value without giving up leadership (LeaseService.Proclaim); the etcd revision at which
     * it took effect. Checked first (LeaseLostException once lost); refused as stale, it ends the leadership.
     */
    public long proclaim(ByteString value) {
      ProclaimRequest req = ProclaimRequest.newBuilder().setToken(Protos.proto(lease.token())).setValue(value).build();
      return lease.write(() -> client.calls().run(s -> s.lease().proclaim(req), true).getRevision());
    }

    public long proclaim(String value) {
      return proclaim(ByteString.copyFromUtf8(value));
    }

    /** Gives leadership up now, so that the next campaigner is elected at once. Idempotent; never throws. */
    public void resign() {
      lease.release();
    }

    @Override
    public String toString() {
      return "Leadership{" + lease + "}";
    }
  }

  /** lead()'s callbacks, in client-go's style (OnStartedLeading, OnStoppedLeading, OnNewLeader). */
  public interface LeadCallbacks {
    /**
     * Runs, on lead()'s thread, while this process leads. lost completes before anyone else can be elected
     * (leadership.isLeading() looks at the clock): stop acting then. Leadership lasts until then, whether or
     * not this returns earlier; if it throws, leadership is resigned. Never runs twice at once in one
     * process for one resource.
     */
    void onElected(CompletableFuture<LeaseLostException> lost, Token token, Leadership leadership) throws Exception;

    /** Leadership ended (lost, resigned, or lead() stopping), after its onElected returned; once per onElected. */
    default void onDeposed(LeaseLostException error) {}

    /** Another leader, this process, or nobody (null) leads now: each change of leader, not of value. */
    default void onNewLeader(Leader leader) {}
  }

  /**
   * A running lead() loop, or observeLeaders(): close() stops it (lead: a leadership is resigned, then
   * onElected is waited for and onDeposed called); done() completes once it has stopped, exceptionally
   * with a refusal that trying again cannot mend (bad arguments, permission denied).
   */
  public static final class Running implements AutoCloseable {
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private volatile boolean stopped;
    private volatile Thread thread;
    private volatile boolean interruptible;
    private volatile Leadership current;
    private volatile Observation observation;

    public CompletableFuture<Void> done() {
      return done.copy();
    }

    /** Stops, and waits until it has. */
    @Override
    public void close() {
      stop();
      try {
        done.join();
      } catch (RuntimeException e) {
        // close() reports nothing: done() does
      }
    }

    /** Stops without waiting. */
    public void stop() {
      synchronized (this) {
        stopped = true;
        if (interruptible && thread != null) thread.interrupt();
      }
      Leadership l = current;
      if (l != null) l.resign();
      Observation o = observation;
      if (o != null) o.close();
    }

    boolean stopped() {
      return stopped;
    }

    /** Runs an interruptible step (a campaign): stop() interrupts it. False if stopped before it began. */
    <T> T interruptibly(Supplier<T> step) {
      synchronized (this) {
        if (stopped) return null;
        interruptible = true;
      }
      try {
        return step.get();
      } finally {
        synchronized (this) {
          interruptible = false;
          Thread.interrupted(); // an interrupt that came after the step: it was for the step
        }
      }
    }
  }

  private static final Backoff BACKOFF = Backoff.DEFAULT;

  /** FencekeeperClient.campaign. */
  static Leadership campaign(FencekeeperClient client, String resource, ByteString value, AcquireOptions o) throws InterruptedException {
    // On a lease of its own unless told otherwise: a leadership must be lost alone, and its leader told at
    // its next renewal when it is released behind its back, which a session's renewal would not tell.
    if (o.shared() || o.maxHolders() != 0 || !o.value().isEmpty()) {
      throw new InvalidArgumentException(
          "a campaign is exclusive and publishes its value argument: AcquireOptions' shared, maxHolders and value must be unset", Status.Code.INVALID_ARGUMENT, null, Map.of(), null);
    }
    AcquireOptions chosen = o.ownLease() != null ? o : o.withOwnLease(true);
    AcquireOptions campaign = (chosen.waitChosen() ? chosen : chosen.waitForever()).withValue(value);
    return new Leadership(client, client.acquire(resource, campaign));
  }

  /** FencekeeperClient.leader. */
  static Leader leader(FencekeeperClient client, String resource) {
    Description d = client.describe(resource);
    return d.token() != null ? new Leader(d.holder() != null ? d.holder() : "", d.token(), d.value()) : null;
  }

  /** FencekeeperClient.observeLeaders. */
  static Running observeLeaders(FencekeeperClient client, String resource, Consumer<LeaderChange> onChange) {
    Running running = new Running();
    Thread t = new Thread(() -> {
      try {
        follow(client, resource, onChange, running);
        running.done.complete(null);
      } catch (InterruptedException e) {
        running.done.complete(null); // stopped
      } catch (Throwable e) {
        running.done.completeExceptionally(e);
      }
    }, "fencekeeper-observe-leaders");
    t.setDaemon(true);
    running.thread = t;
    running.interruptible = true; // stop() interrupts its waits
    t.start();
    return running;
  }

  /** Gives the leader now, then each change; reopens a stream that ended (with backoff) until stopped. */
  private static void follow(FencekeeperClient client, String resource, Consumer<LeaderChange> onChange, Running running) throws InterruptedException {
    Leader last = null;
    boolean given = false;
    int failures = 0;
    while (!running.stopped()) {
      Observation o = client.observe(resource);
      running.observation = o;
      if (running.stopped()) o.close();
      try {
        while (!running.stopped()) {
          Ownership x = o.next(Duration.ofMillis(200));
          if (x == null) continue;
          failures = 0;
          Leader now = x.token() != null ? new Leader(x.holder() != null ? x.holder() : "", x.token(), x.value()) : null;
          if (given && java.util.Objects.equals(now, last)) continue;
          last = now;
          given = true;
          onChange.accept(new LeaderChange(now, x.revision()));
        }
      } catch (InvalidArgumentException | PermissionDeniedException | UnauthenticatedException e) {
        throw e;
      } catch (FencekeeperException e) {
        failures++; // the stream ended (a server draining, a network cut, or close()): open it again
      } finally {
        o.close();
      }
      if (!running.stopped()) Thread.sleep(BACKOFF.delay(Math.max(failures, 1)).toMillis());
    }
  }

  /** The onElected calls running in this process, by resource: the next one waits for the last to return. */
  private static final ConcurrentHashMap<String, CompletableFuture<Void>> TERMS = new ConcurrentHashMap<>();

  /** FencekeeperClient.lead. */
  static Running lead(FencekeeperClient client, String resource, LeadCallbacks cb, AcquireOptions o, Supplier<ByteString> value) {
    Running running = new Running();
    Thread t = new Thread(() -> {
      Running following = observeLeaders(client, resource, new Consumer<>() {
        private Long last = Long.MIN_VALUE;

        @Override
        public void accept(LeaderChange change) {
          Long generation = change.leader() != null ? change.leader().token().getGeneration() : null;
          if (java.util.Objects.equals(generation, last)) return;
          last = generation;
          cb.onNewLeader(change.leader());
        }
      });
      try {
        loop(client, resource, cb, o, value, running);
        running.done.complete(null);
      } catch (Throwable e) {
        running.done.completeExceptionally(e);
      } finally {
        following.close();
      }
    }, "fencekeeper-lead");
    running.thread = t;
    t.start();
    return running;
  }

  private static void loop(FencekeeperClient client, String resource, LeadCallbacks cb, AcquireOptions o, Supplier<ByteString> value, Running running) {
    int failures = 0;
    while (!running.stopped()) {
      Leadership leadership;
      try {
        leadership = running.interruptibly(() -> {
          try {
            return campaign(client, resource, value.get(), o);
          } catch (InterruptedException e) {
            return null;
          }
        });
        failures = 0;
      } catch (CanceledException e) {
        if (running.stopped()) return;
        throw e;
      } catch (UnavailableException | DeadlineExceededException | LeaseNotFoundException | LockDelayException e) {
        failures++;
        try {
          Thread.sleep(BACKOFF.delay(failures).toMillis());
        } catch (InterruptedException x) {
          return;
        }
        continue;
      }
      if (leadership == null) return; // stopped while campaigning
      running.current = leadership;
      if (running.stopped()) leadership.resign();
      serve(resource, leadership, cb);
      running.current = null;
    }
  }

  /** One term: onElected (after any earlier term of the resource in this process), then onDeposed once it is over. */
  private static void serve(String resource, Leadership leadership, LeadCallbacks cb) {
    CompletableFuture<Void> mine = new CompletableFuture<>();
    CompletableFuture<Void> before = TERMS.put(resource, mine);
    boolean served = false;
    try {
      if (before != null) before.join();
      // Lost while the earlier term finished: onElected would start on a completed signal; skip it, and
      // onDeposed with it: that leadership was never this process's to act on.
      served = leadership.isLeading();
      if (served) {
        try {
          cb.onElected(leadership.lost(), leadership.token(), leadership);
        } catch (Exception e) {
          // The elected code failed: a leader that no longer does its work should not keep the others out.
          leadership.resign();
        }
      }
      leadership.lost().join();
      leadership.resign(); // waits for the release the loss started, so that nothing is left held
    } finally {
      TERMS.remove(resource, mine);
      mine.complete(null);
    }
    if (served) cb.onDeposed(leadership.lost().join());
  }
}
