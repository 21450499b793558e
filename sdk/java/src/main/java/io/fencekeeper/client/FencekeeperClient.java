package io.fencekeeper.client;

import io.fencekeeper.v1.AcquireAllRequest;
import io.fencekeeper.v1.AcquireAllResponse;
import io.fencekeeper.v1.AcquireMode;
import io.fencekeeper.v1.AcquireRequest;
import io.fencekeeper.v1.CloseSessionRequest;
import io.fencekeeper.v1.AcquireResponse;
import io.fencekeeper.v1.DescribeRequest;
import io.fencekeeper.v1.DescribeResponse;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.fencekeeper.v1.ListTokenKeysRequest;
import io.fencekeeper.v1.ObserveRequest;
import io.fencekeeper.v1.OpenSessionRequest;
import io.fencekeeper.v1.OpenSessionResponse;
import io.fencekeeper.v1.TokenKey;
import io.fencekeeper.v1.ReleaseRequest;
import io.fencekeeper.v1.RenewRequest;
import io.grpc.Context;
import io.grpc.Status;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.PublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * A fencekeeper client: acquires leases and keeps them alive on one KeepAlive stream, runs work under a
 * lease, and gives the fenced store's calls with an explicit token (store()). Any of several server
 * URLs, replicas of one service, may serve any call. Thread-safe; close() releases what it holds.
 *
 * <pre>{@code
 * try (FencekeeperClient fk = FencekeeperClient.builder().servers("http://127.0.0.1:50051").build();
 *     Lease lease = fk.acquire("orders", AcquireOptions.ttl(Duration.ofSeconds(10)))) {
 *   lease.put("total", "17");   // checks the lease, then writes under its token
 * }
 * }</pre>
 */
public final class FencekeeperClient implements AutoCloseable {
  public static final String DEFAULT_URL = "http://127.0.0.1:50051";
  private static final int CLEANUPS_IN_FLIGHT = 64;

  /** Work to run under a lease (withLease). */
  @FunctionalInterface
  public interface LeaseWork<T, E extends Exception> {
    T run(Lease lease) throws E;
  }

  /** Builds a client; every setting has a default. */
  public static final class Builder {
    private List<String> servers;
    private String holder;
    private Duration driftMargin;
    private Duration callTimeout = Duration.ofSeconds(15);
    private FenceMode fenceMode = FenceMode.LIVE;
    private Backoff backoff = Backoff.DEFAULT;
    private Credentials credentials = Credentials.NONE;
    private Consumer<ClientEvent> onEvent;
    private boolean sessions = true;
    private boolean coalesceWrites = true;

    private Builder() {}

    /** Server URLs (http://host:port or https://host:port), replicas of one service. Default: FENCEKEEPER_URL (comma-separated), else DEFAULT_URL. */
    public Builder servers(String... urls) {
      servers = Arrays.stream(urls).flatMap(u -> Arrays.stream(u.split(","))).map(String::trim).filter(u -> !u.isEmpty()).toList();
      return this;
    }

    /** The holder label sent with Acquire. Default "hostname:pid". */
    public Builder holder(String holder) {
      this.holder = holder;
      return this;
    }

    /** Subtracted from every lease deadline. Default: 100 ms + 1% of the TTL. */
    public Builder driftMargin(Duration margin) {
      driftMargin = margin;
      return this;
    }

    /** The deadline of calls that do not wait. Default 15 s. */
    public Builder callTimeout(Duration timeout) {
      callTimeout = timeout;
      return this;
    }

    /** The fence mode of writes through a lease, unless a call says otherwise. Default LIVE. */
    public Builder fenceMode(FenceMode mode) {
      fenceMode = mode;
      return this;
    }

    /** @deprecated the generated type: use fenceMode(FenceMode). */
    @Deprecated
    public Builder fenceMode(io.fencekeeper.v1.FenceMode mode) {
      fenceMode = Protos.mode(mode);
      return this;
    }

    /** The KeepAlive stream's reconnection backoff: at once, then base doubling up to max, with jitter. Default 100 ms, 2 s. */
    public Builder backoff(Duration base, Duration max) {
      backoff = new Backoff(base, max);
      return this;
    }

    /** Credentials for a server with authentication on. */
    public Builder credentials(Credentials credentials) {
      this.credentials = credentials;
      return this;
    }

    /**
     * Puts acquisitions on sessions: one per TTL (in whole seconds), opened on first use, renewed on the
     * KeepAlive stream, closed by close(). Default true, as etcd's Mutex, Curator and Chubby lock on a
     * session; false gives each acquisition an etcd lease of its own, for a TTL whose fate is its own, or a
     * holder that must lose one lock without losing the others, or learn at its next renewal that it was
     * released behind its back (docs/client.md, "Sessions"). A lock-delay or a preemption always takes a
     * lease of its own.
     */
    public Builder sessions(boolean on) {
      sessions = on;
      return this;
    }

    /**
     * Coalesces concurrent puts and deletes (through leases or store()) into FencedStoreService.Batch
     * calls: a write that finds fewer than two calls in flight goes out at once (alone, as a plain Put or
     * Delete), and the writes that arrive while two are in flight go together in the next call, up to
     * 1000 writes and 2 MiB of values. No timer, so a lone write waits for nothing. Each write keeps its
     * own answer and exception, as alone. Against a server without Batch, one call a write by itself.
     * Default true; false: one call a write.
     */
    public Builder coalesceWrites(boolean on) {
      coalesceWrites = on;
      return this;
    }

    /** Events for logs, metrics and tests; see ClientEvent. Without a listener no event is even built. */
    public Builder onEvent(Consumer<ClientEvent> listener) {
      onEvent = listener;
      return this;
    }

    public FencekeeperClient build() {
      return new FencekeeperClient(this);
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  private final Servers servers;
  private final Calls calls;
  private final Store store;
  private final KeepAlive keepAlive;
  private final String holder;
  private final UnaryOperator<Duration> drift;
  private final Consumer<ClientEvent> onEvent;
  /** acquireAsync's calls run here, each on a thread of its own while it waits in line. */
  private final ExecutorService background;
  /**
   * Releases run here, off the keep-alive thread, at most CLEANUPS_IN_FLIGHT at a time; more wait their
   * turn. A lease's lost() completes when it is released, whatever its call waits for: this only keeps
   * close() with thousands of leases from starting thousands of calls (and threads) at once.
   */
  private final ThreadPoolExecutor cleanups;
  private final Set<Lease> leases = ConcurrentHashMap.newKeySet();
  private final Lease.Context leaseContext;
  /** The sessions, by TTL in whole seconds, each opened once however many acquisitions ask; null without sessions. */
  private final Map<Long, CompletableFuture<Session>> sessions;
  private final Session.Host sessionHost;
  private volatile boolean closed;

  private FencekeeperClient(Builder b) {
    List<String> urls = b.servers;
    if (urls == null) {
      String env = System.getenv("FENCEKEEPER_URL");
      urls = Arrays.stream((env == null || env.isBlank() ? DEFAULT_URL : env).split(",")).map(String::trim).filter(u -> !u.isEmpty()).toList();
    }
    servers = new Servers(urls, b.credentials);
    calls = new Calls(servers, b.callTimeout);
    onEvent = b.onEvent;
    store = new Store(calls, b.coalesceWrites, onEvent != null ? this::emit : null);
    keepAlive = new KeepAlive(servers, b.backoff, this::emit, onEvent != null);
    holder = b.holder != null ? b.holder : defaultHolder();
    drift = b.driftMargin != null ? ttl -> b.driftMargin : Deadline::defaultDrift;
    background = Executors.newCachedThreadPool(daemon("fencekeeper-acquire"));
    cleanups = new ThreadPoolExecutor(CLEANUPS_IN_FLIGHT, CLEANUPS_IN_FLIGHT, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), daemon("fencekeeper-release"));
    cleanups.allowCoreThreadTimeOut(true);
    FenceMode fenceMode = b.fenceMode;
    leaseContext = new Lease.Context() {
      @Override public Store store() { return store; }
      @Override public FenceMode fenceMode() { return fenceMode; }
      @Override public KeepAlive keepAlive() { return keepAlive; }
      @Override public boolean listening() { return onEvent != null; }
      @Override public void emit(ClientEvent event) { FencekeeperClient.this.emit(event); }
      @Override public CompletableFuture<Void> release(Token token) { return releaseInBackground(token); }
      @Override public void ended(Lease lease) { leases.remove(lease); }
    };
    sessions = b.sessions ? new ConcurrentHashMap<>() : null;
    sessionHost = new Session.Host() {
      @Override public KeepAlive keepAlive() { return keepAlive; }
      @Override public CompletableFuture<Void> close(long id) { return closeSessionInBackground(id); }
      @Override public void forget(Session session) { forgetSession(session); }
      @Override public boolean listening() { return onEvent != null; }
      @Override public void emit(ClientEvent event) { FencekeeperClient.this.emit(event); }
    };
  }

  /** Whether acquisitions go on sessions (Builder.sessions). */
  public boolean sessions() {
    return sessions != null;
  }

  /** The fenced store with explicit tokens; writes through a Lease attach its token themselves. */
  public Store store() {
    return store;
  }

  /**
   * Acquires a resource and keeps its lease alive until it is released or lost. Blocks while it waits
   * in line (AcquireOptions.waitForever, waitAtMost); interrupting the thread cancels the wait and
   * throws InterruptedException. Fails with ResourceHeldException (not waiting), DeadlineExceededException
   * (waited as long as allowed), InvalidArgumentException, UnavailableException, ...
   */
  public Lease acquire(String resource, AcquireOptions o) throws InterruptedException {
    Context.CancellableContext context = Context.current().withCancellation();
    try {
      return context.call(() -> acquireIn(resource, o, context));
    } catch (CanceledException e) {
      if (Thread.interrupted()) throw interrupted(e);
      throw e;
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e); // acquireIn throws no checked exception
    } finally {
      context.cancel(null);
    }
  }

  /**
   * Acquires every resource or none, as Curator's InterProcessMultiLock does, in one AcquireAll call: the
   * server takes them exclusively in the order of their names' bytes, so that two callers asking for
   * overlapping sets cannot deadlock, and gives back what it took when one fails (the exception is that
   * resource's: ResourceHeldException, DeadlineExceededException, ...). o.waitForever / waitAtMost wait
   * for the whole set. Returns one Lease per resource, in the order given, each released on its own; on
   * the client's session unless o.withOwnLease(true) or the client was built with sessions(false). Of the
   * options, ttl, waits, waitLimit, holder and ownLease apply; lockDelay, shared, value, maxHolders and
   * preempt must be unset.
   */
  public List<Lease> acquireAll(List<String> resources, AcquireOptions o) throws InterruptedException {
    if (!o.lockDelay().isZero() || o.shared() || !o.value().isEmpty() || o.maxHolders() != 0 || o.preempt()) {
      throw new InvalidArgumentException("acquireAll takes exclusive acquisitions with ttl, waits, waitLimit and holder only", Status.Code.INVALID_ARGUMENT, null, Map.of(), null);
    }
    Context.CancellableContext context = Context.current().withCancellation();
    try {
      return context.call(() -> acquireAllIn(List.copyOf(resources), o, context));
    } catch (CanceledException e) {
      if (Thread.interrupted()) throw interrupted(e);
      throw e;
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(e); // acquireAllIn throws no checked exception
    } finally {
      context.cancel(null);
    }
  }

  private List<Lease> acquireAllIn(List<String> resources, AcquireOptions o, Context.CancellableContext context) {
    if (closed) throw closedError();
    Session session = null;
    AcquireAllRequest.Builder req = AcquireAllRequest.newBuilder().addAllResources(resources).setHolder(o.holder() != null ? o.holder() : holder).setWait(o.waits());
    if (sessions != null && !o.onOwnLease()) {
      session = session(o.ttl());
      req.setSessionId(session.id());
    } else {
      req.setTtl(proto(o.ttl()));
    }
    Duration waitLimit = o.waitLimit();
    if (waitLimit != null) req.setWaitTimeout(proto(Duration.ofMillis((waitLimit.toNanos() + 999_999) / 1_000_000)));
    Duration deadline = !o.waits() ? calls.timeout : waitLimit == null ? null : calls.timeout.plus(waitLimit);
    Stamp sentAt = Stamp.now();
    AcquireAllResponse res;
    try {
      res = calls.run(s -> s.lease().acquireAll(req.build()), false, deadline);
    } catch (FencekeeperException e) {
      // The session holds one of them already: the set goes on leases of its own, as acquire() would.
      if (session != null && "ALREADY_ACQUIRED".equals(e.reason())) return acquireAllIn(resources, o, context, true);
      if (session != null && context.isCancelled()) for (String r : resources) releaseUnanswered(r, session.id());
      throw e;
    }
    return granted(resources, res, session, sentAt, context);
  }

  /** acquireAllIn on leases of their own (a session that already held one of the resources). */
  private List<Lease> acquireAllIn(List<String> resources, AcquireOptions o, Context.CancellableContext context, boolean ownLeases) {
    AcquireAllRequest.Builder req = AcquireAllRequest.newBuilder().addAllResources(resources).setHolder(o.holder() != null ? o.holder() : holder).setWait(o.waits()).setTtl(proto(o.ttl()));
    Duration waitLimit = o.waitLimit();
    if (waitLimit != null) req.setWaitTimeout(proto(Duration.ofMillis((waitLimit.toNanos() + 999_999) / 1_000_000)));
    Duration deadline = !o.waits() ? calls.timeout : waitLimit == null ? null : calls.timeout.plus(waitLimit);
    Stamp sentAt = Stamp.now();
    return granted(resources, calls.run(s -> s.lease().acquireAll(req.build()), false, deadline), null, sentAt, context);
  }

  /** The leases of an AcquireAll's grants, each kept as acquire()'s (its own lease, or the session's). */
  private List<Lease> granted(List<String> resources, AcquireAllResponse res, Session session, Stamp sentAt, Context.CancellableContext context) {
    if (res.getAcquisitionsCount() != resources.size()) {
      throw new FencekeeperException("the server answered AcquireAll without a grant for every resource", Status.Code.INTERNAL, null, Map.of(), null);
    }
    Stamp answeredAt = Stamp.now();
    List<Token> tokens = new ArrayList<>();
    for (AcquireResponse a : res.getAcquisitionsList()) tokens.add(Protos.token(a.getToken()));
    if (session != null && session.expireIfPassed()) {
      // The session was lost while the call was on its way; the acquisitions went with it.
      throw Errors.unavailable("acquire of " + resources.size() + " resources: their session was lost while acquiring; try again", null);
    }
    if (context.isCancelled() || closed) {
      for (Token t : tokens) releaseInBackground(t).join();
      throw new CanceledException("acquire of " + resources.size() + " resources was canceled", Status.Code.CANCELLED, null, Map.of(), null);
    }
    List<Lease> out = new ArrayList<>();
    for (int i = 0; i < tokens.size(); i++) {
      Token token = tokens.get(i);
      Lease lease;
      if (session != null) {
        lease = new Lease(token, session, leaseContext);
        leases.add(lease);
        session.attach(lease);
        if (onEvent != null) emit(new ClientEvent.Acquired(token, session.ttl(), lease.validUntil()));
      } else {
        Duration ttl = duration(res.getAcquisitions(i).getTtl());
        Stamp from = sentAt;
        Stamp to = answeredAt;
        // As for one acquisition: after a long wait, the deadline counts from a renewal sent now.
        if (to.monoNanos() - from.monoNanos() > ttl.dividedBy(3).toNanos()) {
          from = Stamp.now();
          try {
            ttl = duration(calls.run(s -> s.lease().renew(RenewRequest.newBuilder().setLeaseId(token.getLeaseId()).build()), true).getTtl());
          } catch (RuntimeException e) {
            for (Token t : tokens) releaseInBackground(t);
            throw e;
          }
          to = Stamp.now();
        }
        lease = new Lease(token, ttl, new Deadline(from, ttl, to, drift), leaseContext);
        leases.add(lease);
        if (onEvent != null) emit(new ClientEvent.Acquired(token, ttl, lease.validUntil()));
        keepAlive.add(lease.keeper, from.monoNanos() + lease.interval().toNanos());
      }
      out.add(lease);
    }
    return out;
  }

  /**
   * acquire() on a thread of the client's: the future completes with the lease, or with its failure.
   * Canceling the future cancels the wait in line; a lease granted meanwhile is released.
   */
  public CompletableFuture<Lease> acquireAsync(String resource, AcquireOptions o) {
    Context.CancellableContext context = Context.ROOT.withCancellation();
    CompletableFuture<Lease> future = new CompletableFuture<>();
    future.whenComplete((lease, error) -> {
      if (future.isCancelled()) context.cancel(null);
    });
    try {
      background.execute(() -> {
        try {
          Lease lease = context.call(() -> acquireIn(resource, o, context));
          if (!future.complete(lease)) lease.lose(LossCause.CANCELED, null);
        } catch (Throwable e) {
          future.completeExceptionally(e);
        } finally {
          context.cancel(null);
        }
      });
    } catch (RejectedExecutionException e) {
      future.completeExceptionally(closedError());
    }
    return future;
  }

  /**
   * Runs work under a lease on resource and releases the lease afterwards, also when work throws (its
   * exception is then rethrown). If the lease was lost before work returned, throws the LeaseLostException.
   */
  public <T, E extends Exception> T withLease(String resource, AcquireOptions o, LeaseWork<T, E> work) throws E, InterruptedException {
    try (Lease lease = acquire(resource, o)) {
      T result = work.run(lease);
      try {
        lease.check();
      } catch (LeaseLostException lost) {
        if (lost.why() != LossCause.RELEASED) throw lost;
      }
      return result;
    }
  }

  /** The client's calls, for the election helpers (Election.java). */
  Calls calls() {
    return calls;
  }

  /**
   * A permit of a counting semaphore of n on resource (docs/semaphores.md): waits in line, first come
   * first served, as o says (forever unless o chose noWait or waitAtMost), until fewer than n hold it,
   * and keeps the permit's lease alive until it is released or lost. The permit's token is a shared
   * token: the fenced store refuses its writes. Another n while anyone holds or waits is a
   * FencekeeperException with reason MAX_HOLDERS_MISMATCH (FAILED_PRECONDITION).
   */
  public Lease semaphore(String resource, int n, AcquireOptions o) throws InterruptedException {
    return Semaphore.acquire(this, resource, n, o);
  }

  /**
   * Waits in line for resource, exclusively, publishing value (docs/election.md), and returns once elected:
   * an acquire with o's TTL and holder that waits (forever unless o chose noWait or waitAtMost). Interrupting
   * the thread cancels the wait.
   */
  public Election.Leadership campaign(String resource, String value, AcquireOptions o) throws InterruptedException {
    return Election.campaign(this, resource, com.google.protobuf.ByteString.copyFromUtf8(value), o);
  }

  /** The current leader, or null when nobody holds the resource exclusively. */
  public Election.Leader leader(String resource) {
    return Election.leader(this, resource);
  }

  /**
   * Calls onChange, on a thread of its own, with the leader now, then each change of leader or of its
   * value, in order, until closed. A stream the server or the network ends is opened again with backoff,
   * and starts with the current leader, given only if it differs from the last one given.
   */
  public Election.Running observeLeaders(String resource, Consumer<Election.LeaderChange> onChange) {
    return Election.observeLeaders(this, resource, onChange);
  }

  /**
   * Campaigns for resource on a thread of its own until the returned handle is closed, in client-go's
   * style: each time elected, runs callbacks.onElected; after a loss, once it returned, onDeposed, and
   * campaigns again. Never two onElected at once in one process for one resource. UNAVAILABLE, deadlines,
   * a lease lost while waiting and a lock-delay are retried with backoff; another refusal ends it (done()
   * completes exceptionally). o: the campaigns' TTL and holder.
   */
  public Election.Running lead(String resource, Election.LeadCallbacks callbacks, AcquireOptions o, String value) {
    com.google.protobuf.ByteString v = com.google.protobuf.ByteString.copyFromUtf8(value);
    return Election.lead(this, resource, callbacks, o, () -> v);
  }

  /** Who holds a resource, with which token, for how much longer, and how many wait. */
  public Description describe(String resource) {
    DescribeResponse d = calls.run(s -> s.lease().describe(DescribeRequest.newBuilder().setResource(resource).build()), true);
    return new Description(d.getHeld(), d.getHeld() ? d.getHolder() : null, d.hasToken() ? Protos.token(d.getToken()) : null,
        d.hasTtl() ? Duration.ofSeconds(d.getTtl().getSeconds(), d.getTtl().getNanos()) : null, d.getWaiters(), d.getFence(),
        d.getLastIssued(), d.getHolderPrincipal(),
        Protos.holders(d.getHoldersList()),
        d.hasLockDelay() ? duration(d.getLockDelay()) : null,
        d.hasLockDelayUntil() ? Instant.ofEpochSecond(d.getLockDelayUntil().getSeconds(), d.getLockDelayUntil().getNanos()) : null,
        d.getValue(), d.getMaxHolders());
  }

  /** The ownership of a resource now, then each change of holder, until the Observation is closed. */
  public Observation observe(String resource) {
    Context.CancellableContext context = Context.ROOT.withCancellation();
    Observation observation = new Observation(context);
    String url = servers.current();
    context.run(() -> LeaseServiceGrpc.newStub(servers.channel(Servers.Use.CALLS, url))
        .observe(ObserveRequest.newBuilder().setResource(resource).build(), observation.observer()));
    return observation;
  }

  /**
   * Renews a lease once, by its id, for a program that keeps tokens itself (leases acquired here are
   * renewed by the client): the TTL left. LeaseNotFoundException if it is gone.
   */
  public Duration renew(long leaseId) {
    var ttl = calls.run(s -> s.lease().renew(RenewRequest.newBuilder().setLeaseId(leaseId).build()), true).getTtl();
    return Duration.ofSeconds(ttl.getSeconds(), ttl.getNanos());
  }

  /**
   * The server's public keys that verify tokens (Tokens.verifyToken), by key id, the signing one first.
   * Empty from a server that signs nothing.
   */
  public Map<String, PublicKey> tokenKeys() {
    Map<String, PublicKey> keys = new LinkedHashMap<>();
    for (TokenKey k : calls.run(s -> s.lease().listTokenKeys(ListTokenKeysRequest.getDefaultInstance()), true).getKeysList()) {
      if (k.getAlgorithm().isEmpty() || k.getAlgorithm().equals("Ed25519")) keys.put(k.getKeyId(), Tokens.ed25519PublicKey(k.getPublicKey().toByteArray()));
    }
    return keys;
  }

  /**
   * Releases every lease still held and closes every session (each lost() completes at once), then
   * closes the connections.
   */
  @Override
  public void close() {
    closed = true;
    // A session's leases end with it, in one CloseSession; what is left has leases of its own.
    List<Session> open = new ArrayList<>();
    if (sessions != null) {
      for (CompletableFuture<Session> opening : sessions.values()) {
        try {
          open.add(opening.join()); // an OpenSession under way is waited for: its session is closed too
        } catch (RuntimeException e) {
          // It failed to open: nothing to close.
        }
      }
    }
    for (Session session : open) session.lose(LossCause.RELEASED, null);
    for (Session session : open) session.cleaned().join();
    List<Lease> held = new ArrayList<>(leases);
    for (Lease lease : held) lease.lose(LossCause.RELEASED, null);
    for (Lease lease : held) lease.release(); // waits for the calls started above
    keepAlive.close();
    background.shutdown();
    cleanups.shutdown();
    servers.close();
  }

  private Lease acquireIn(String resource, AcquireOptions o, Context.CancellableContext context) {
    if (closed) throw closedError();
    // A lock-delay is for an acquisition of its own: on a session, acquisitions end with the session.
    if (sessions != null && o.lockDelay().isZero() && !o.preempt() && !o.onOwnLease()) {
      Lease lease = acquireOnSession(resource, o, context);
      if (lease != null) return lease;
    }
    return acquireOwn(resource, o, context);
  }

  /** Sends one Acquire, waiting at most waitLimit (null: as o says), with a deadline that leaves room for the wait. */
  private AcquireResponse acquireCall(AcquireRequest.Builder req, AcquireOptions o, Duration waitLimit) {
    req.setHolder(o.holder() != null ? o.holder() : holder).setWait(o.waits()).setMode(o.shared() || o.maxHolders() > 0 ? AcquireMode.ACQUIRE_MODE_SHARED : AcquireMode.ACQUIRE_MODE_UNSPECIFIED);
    req.setValue(o.value()).setMaxHolders(o.maxHolders());
    // Whole ms: a call's deadline goes out as a grpc-timeout header.
    if (waitLimit != null) req.setWaitTimeout(proto(Duration.ofMillis((waitLimit.toNanos() + 999_999) / 1_000_000)));
    Duration deadline = !o.waits() ? calls.timeout : waitLimit == null ? null : calls.timeout.plus(waitLimit);
    AcquireResponse res = calls.run(s -> s.lease().acquire(req.build()), false, deadline);
    if (!res.hasToken()) {
      throw new FencekeeperException("the server granted a lease without a token", Status.Code.INTERNAL, null, Map.of(), null);
    }
    return res;
  }

  /** An acquisition on an etcd lease of its own. */
  private Lease acquireOwn(String resource, AcquireOptions o, Context.CancellableContext context) {
    AcquireRequest.Builder req = AcquireRequest.newBuilder().setResource(resource).setTtl(proto(o.ttl()));
    if (!o.lockDelay().isZero()) req.setLockDelay(proto(o.lockDelay()));
    if (o.preempt()) req.setPreempt(true);
    Stamp sentAt = Stamp.now();
    AcquireResponse res = acquireCall(req, o, o.waitLimit());
    if (!res.hasTtl()) {
      throw new FencekeeperException("the server granted a lease without a TTL", Status.Code.INTERNAL, null, Map.of(), null);
    }
    Token token = Protos.token(res.getToken());
    Duration ttl = duration(res.getTtl());
    Stamp answeredAt = Stamp.now();
    // The deadline counts from the Acquire's send, and a wait in line uses it up: the TTL started when the
    // lease was granted, at some unknown point before the answer. Then count from a Renew instead.
    if (answeredAt.monoNanos() - sentAt.monoNanos() > ttl.dividedBy(3).toNanos()) {
      sentAt = Stamp.now();
      try {
        ttl = duration(calls.run(s -> s.lease().renew(RenewRequest.newBuilder().setLeaseId(token.getLeaseId()).build()), true).getTtl());
      } catch (RuntimeException e) {
        releaseInBackground(token);
        throw e;
      }
      answeredAt = Stamp.now();
    }
    if (context.isCancelled() || closed) {
      releaseInBackground(token).join();
      throw new CanceledException("acquire of \"" + resource + "\" was canceled", Status.Code.CANCELLED, null, Map.of(), null);
    }
    Lease lease = new Lease(token, ttl, new Deadline(sentAt, ttl, answeredAt, drift), leaseContext);
    lease.lockDelay = !o.lockDelay().isZero() || res.hasLockDelay();
    leases.add(lease);
    if (onEvent != null) emit(new ClientEvent.Acquired(token, ttl, lease.validUntil()));
    keepAlive.add(lease.keeper, sentAt.monoNanos() + lease.interval().toNanos());
    return lease;
  }

  /**
   * An acquisition on the client's session of that TTL (opened if there is none, or if it was lost).
   * Null when the session already holds or waits for the resource (ALREADY_ACQUIRED): a session takes a
   * resource once at a time, so that acquisition goes on a lease of its own, as without sessions. A
   * session found gone (NOT_FOUND) is lost, with its leases, and the acquisition tried once more on a new one.
   */
  private Lease acquireOnSession(String resource, AcquireOptions o, Context.CancellableContext context) {
    long startedAt = System.nanoTime();
    for (int attempt = 1; ; attempt++) {
      Session session = session(o.ttl());
      // A second attempt (the first one's session was lost) waits only for what is left of the wait.
      Duration waitLimit = o.waitLimit();
      if (waitLimit != null) {
        waitLimit = waitLimit.minusNanos(System.nanoTime() - startedAt);
        if (waitLimit.compareTo(Duration.ofMillis(1)) < 0) waitLimit = Duration.ofMillis(1);
      }
      AcquireResponse res;
      try {
        res = acquireCall(AcquireRequest.newBuilder().setResource(resource).setSessionId(session.id()), o, waitLimit);
      } catch (LeaseNotFoundException e) {
        // The session is gone (it expired, or was closed, behind the client's back): lost, with its leases.
        session.lose(LossCause.NOT_FOUND, e);
        if (attempt == 1) continue;
        throw e;
      } catch (FencekeeperException e) {
        if ("ALREADY_ACQUIRED".equals(e.reason())) return null;
        if (context.isCancelled()) releaseUnanswered(resource, session.id());
        throw e;
      }
      Token token = Protos.token(res.getToken());
      if (session.expireIfPassed()) {
        // The session was lost while the Acquire was on its way; the acquisition went with it.
        if (attempt == 1) continue;
        throw Errors.unavailable("acquire of \"" + resource + "\": its session was lost twice while acquiring; try again", null);
      }
      if (context.isCancelled() || closed) {
        releaseInBackground(token).join();
        throw new CanceledException("acquire of \"" + resource + "\" was canceled", Status.Code.CANCELLED, null, Map.of(), null);
      }
      Lease lease = new Lease(token, session, leaseContext);
      leases.add(lease);
      session.attach(lease);
      if (onEvent != null) emit(new ClientEvent.Acquired(token, session.ttl(), lease.validUntil()));
      return lease;
    }
  }

  /** The open session of this TTL, shared; opened once however many acquisitions ask at once. */
  private Session session(Duration ttl) {
    // etcd grants whole seconds, so TTLs that round up to the same second share a session.
    long key = (ttl.toNanos() + 999_999_999) / 1_000_000_000;
    while (true) {
      if (closed) throw closedError();
      CompletableFuture<Session> mine = new CompletableFuture<>();
      CompletableFuture<Session> opening = sessions.putIfAbsent(key, mine);
      if (opening == null) {
        try {
          // Not in the caller's Context: the acquisitions that wait for this session must not be canceled with it.
          Session session = Context.ROOT.call(() -> openSession(ttl));
          mine.complete(session);
          return session;
        } catch (Exception e) {
          sessions.remove(key, mine);
          mine.completeExceptionally(e);
          if (e instanceof RuntimeException r) throw r;
          throw new IllegalStateException(e); // openSession throws no checked exception
        }
      }
      Session session;
      try {
        session = opening.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CanceledException("acquire was interrupted while its session opened", Status.Code.CANCELLED, null, Map.of(), e);
      } catch (ExecutionException e) {
        throw Errors.from(e.getCause());
      }
      if (!session.expireIfPassed()) return session;
      sessions.remove(key, opening); // lost (forgetSession did this already): the next turn opens a new one
    }
  }

  /** Opens a session of ttl and starts renewing it. */
  private Session openSession(Duration ttl) {
    Stamp sentAt = Stamp.now();
    OpenSessionResponse res = calls.run(s -> s.lease().openSession(OpenSessionRequest.newBuilder().setTtl(proto(ttl)).setHolder(holder).build()), false);
    long id = res.getSessionId();
    Duration granted = duration(res.getTtl());
    Stamp answeredAt = Stamp.now();
    // As for a lease of its own: an answer that took more than a third of the TTL (a first call that set
    // up its connection, a loaded machine) leaves little or none of the deadline; count from a Renew.
    if (answeredAt.monoNanos() - sentAt.monoNanos() > granted.dividedBy(3).toNanos()) {
      sentAt = Stamp.now();
      try {
        granted = duration(calls.run(s -> s.lease().renew(RenewRequest.newBuilder().setLeaseId(id).build()), true).getTtl());
      } catch (RuntimeException e) {
        closeSessionInBackground(id);
        throw e;
      }
      answeredAt = Stamp.now();
    }
    Session session = new Session(id, granted, new Deadline(sentAt, granted, answeredAt, drift), sessionHost);
    if (onEvent != null) emit(new ClientEvent.SessionOpened(session.id(), granted, session.deadline().validUntil()));
    keepAlive.add(session, sentAt.monoNanos() + session.interval().toNanos());
    return session;
  }

  /** Drops a session that ended, so that the next acquisition of its TTL opens a new one. */
  private void forgetSession(Session session) {
    sessions.values().removeIf(f -> f.isDone() && !f.isCompletedExceptionally() && f.join() == session);
  }

  private CompletableFuture<Void> closeSessionInBackground(long id) {
    // Gone already, or no server answers: with renewals stopped, the session ends at its TTL either way.
    Runnable close = () -> {
      try {
        calls.run(s -> s.lease().closeSession(CloseSessionRequest.newBuilder().setSessionId(id).build()), true);
      } catch (RuntimeException e) {
        // See above.
      }
    };
    try {
      return CompletableFuture.runAsync(close, cleanups);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  /**
   * Follows an Acquire on a session that was canceled before its answer came: the server may have granted
   * it, with the answer on its way. A session holds a resource once at a time, so a holding of resource on
   * that session that this client never handed out is that grant: given back, or it would stand as long
   * as the session. In the background, best effort: if no server answers, it ends with the session.
   */
  private void releaseUnanswered(String resource, long sessionId) {
    Runnable find = () -> {
      Description d;
      try {
        d = describe(resource);
      } catch (RuntimeException e) {
        return;
      }
      Set<String> ours = new HashSet<>();
      for (Lease l : leases) ours.add(l.token().getLeaseId() + ":" + l.token().getGeneration());
      List<Token> tokens = new ArrayList<>();
      for (Description.Holder h : d.holders()) tokens.add(h.token());
      if (d.token() != null) tokens.add(d.token());
      for (Token t : tokens) {
        // ours.add: a holder listed twice (exclusive: token and holders) is released once.
        if (t.getLeaseId() == sessionId && ours.add(t.getLeaseId() + ":" + t.getGeneration())) releaseInBackground(t);
      }
    };
    try {
      background.execute(find);
    } catch (RejectedExecutionException e) {
      // Closed: the session is closed with the client.
    }
  }

  private CompletableFuture<Void> releaseInBackground(Token token) {
    // Gone already, or no server answers: with renewals stopped, the lease ends at its TTL either way.
    Runnable release = () -> {
      try {
        calls.run(s -> s.lease().release(ReleaseRequest.newBuilder().setToken(Protos.proto(token)).build()), true);
      } catch (RuntimeException e) {
        // See above.
      }
    };
    try {
      return CompletableFuture.runAsync(release, cleanups);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.completedFuture(null);
    }
  }

  private void emit(ClientEvent event) {
    if (onEvent == null) return;
    try {
      onEvent.accept(event);
    } catch (RuntimeException e) {
      // A failing listener must not stop the keeping of leases; its error surfaces on its own.
      Thread t = Thread.currentThread();
      t.getUncaughtExceptionHandler().uncaughtException(t, e);
    }
  }

  private static ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  private static CanceledException closedError() {
    return new CanceledException("the client is closed", Status.Code.CANCELLED, null, Map.of(), null);
  }

  private static InterruptedException interrupted(Throwable cause) {
    InterruptedException e = new InterruptedException("acquire was interrupted");
    e.initCause(cause);
    return e;
  }

  private static com.google.protobuf.Duration proto(Duration d) {
    return com.google.protobuf.Duration.newBuilder().setSeconds(d.getSeconds()).setNanos(d.getNano()).build();
  }

  private static Duration duration(com.google.protobuf.Duration d) {
    return Duration.ofSeconds(d.getSeconds(), d.getNanos());
  }

  private static String defaultHolder() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      host = "unknown";
    }
    return host + ":" + ProcessHandle.current().pid();
  }
}
