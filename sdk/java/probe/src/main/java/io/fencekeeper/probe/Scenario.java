package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.ClientEvent;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.Description;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.InvalidArgumentException;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.LeaseNotFoundException;
import io.fencekeeper.client.LossCause;
import io.fencekeeper.client.Observation;
import io.fencekeeper.client.Ownership;
import io.fencekeeper.client.ResourceHeldException;
import io.fencekeeper.client.StaleTokenException;
import io.fencekeeper.client.Store;
import io.fencekeeper.client.Tokens;
import io.fencekeeper.client.FenceMode;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import java.nio.charset.StandardCharsets;
import java.security.PublicKey;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The scenario of test/conformance/SCENARIO.md through the client library instead of the raw stubs:
 * where the conformance client sends KeepAlive requests itself, here the library keeps the lease alive,
 * and each failure is the library's typed exception, with the ErrorInfo reason it carries.
 */
final class Scenario {
  private static final Duration TTL = Duration.ofSeconds(2);
  // B's lease carries the writes from the handover on: its TTL is not what those steps test, and a loaded
  // machine that stalls a process for a couple of seconds must not take it away from under them.
  private static final Duration HELD_TTL = Duration.ofSeconds(10);
  private static final Duration HOLD_FOR = Duration.ofSeconds(7);

  /** A step did not go as SCENARIO.md says. */
  static final class Unexpected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Unexpected(String message) {
      super(message);
    }
  }

  interface Call {
    void run() throws Exception;
  }

  private Scenario() {}

  /** With sessions, A and B acquire on sessions, and a last step (Sessions.java) checks what sessions promise. */
  static void run(String server, Credentials credentials, String resource, boolean sessions, boolean coalesce) throws Exception {
    AtomicInteger renewals = new AtomicInteger();
    AtomicInteger writeCalls = new AtomicInteger();
    try (FencekeeperClient a = client(server, credentials, "java-a", sessions, e -> {
          if (e instanceof ClientEvent.Renewed || e instanceof ClientEvent.SessionRenewed) renewals.incrementAndGet();
        });
        FencekeeperClient b = client(server, credentials, "java-b", sessions, null);
        FencekeeperClient observer = client(server, credentials, "java-observer", false, null);
        FencekeeperClient writer = FencekeeperClient.builder().servers(server).holder("java-writer").credentials(credentials).coalesceWrites(coalesce)
            .onEvent(e -> {
              if (e instanceof ClientEvent.WritesSent) writeCalls.incrementAndGet();
            }).build();
        Observation observed = observer.observe(resource)) {
      // 1. Observe.
      // A bound for a stuck stream, not a speed check: a loaded machine may take long for the first answer.
      Ownership first = observed.next(Duration.ofSeconds(60));
      check(first != null && !first.held(), "observe: expected " + resource + " not held at first, got " + first);
      step("observe: " + resource + " not held");

      // 2. Acquire.
      Lease leaseA = a.acquire(resource, AcquireOptions.ttl(TTL));
      Token tokenA = leaseA.token();
      check(tokenA.getResource().equals(resource) && tokenA.getGeneration() > 0 && leaseA.ttl().equals(TTL),
          "acquire: expected a token for " + resource + " with a positive generation and ttl 2s, got " + tokenA + " ttl " + leaseA.ttl());
      check(leaseA.onSession() == sessions, "acquire: expected the lease " + (sessions ? "on a session" : "of its own"));
      step("acquire: generation " + tokenA.getGeneration() + ", lease " + tokenA.getLeaseId() + (sessions ? " (a session)" : ""));

      // The token verifies offline with the server's keys; altered, it does not.
      Map<String, PublicKey> keys = a.tokenKeys();
      Token altered = tokenA.withGeneration(tokenA.getGeneration() + 1);
      Tokens.Verification verified = Tokens.verifyToken(tokenA, keys);
      check(verified == Tokens.Verification.OK && Tokens.verifyToken(altered, keys) == Tokens.Verification.BAD_SIGNATURE,
          "acquire: expected the token to verify and an altered one not to, got " + verified + ", " + Tokens.verifyToken(altered, keys));
      step("acquire: the token verifies offline (key " + tokenA.getKeyId() + ")");

      // 3. Put, through the lease, in FENCE_MODE_ORDER with an idempotency key.
      String valueA = "hello from java-a";
      Store.Commit put = leaseA.put("greeting", bytes(valueA), WriteOptions.mode(FenceMode.ORDER).withIdempotencyKey(resource + "-put-a"));
      check(put.fence() == tokenA.getGeneration(), "put: expected fence " + tokenA.getGeneration() + ", got " + put.fence());
      step("put: fence " + put.fence());

      // 3b. Batch: independent writes in one call, each answered as it would be alone.
      WriteOptions once = WriteOptions.DEFAULT.withIdempotencyKey(resource + "-batch-1");
      java.util.List<Store.BatchResult> results = a.store().batch(java.util.List.of(
          Store.batchPut(tokenA, "batch-1", bytes("one"), once),
          Store.batchPut(tokenA, "", bytes("an empty key is refused"), WriteOptions.DEFAULT),
          Store.batchDelete(tokenA, "batch-never-written", WriteOptions.DEFAULT)));
      check(results.size() == 3 && results.get(0).commit() != null && results.get(0).commit().fence() == tokenA.getGeneration()
          && results.get(1).error() instanceof InvalidArgumentException && results.get(2).commit() != null,
          "batch: expected a commit, InvalidArgumentException, a commit; got " + results);
      Store.BatchResult again = a.store().batch(java.util.List.of(Store.batchPut(tokenA, "batch-1", bytes("one"), once))).get(0);
      check(again.commit() != null && again.commit().replayed() && again.commit().revision() == results.get(0).commit().revision(),
          "batch: expected the retry replayed at revision " + results.get(0).commit().revision() + ", got " + again);
      step("batch: two commits at fence " + results.get(0).commit().fence() + " and an InvalidArgumentException of its own; the retry replayed");

      // 4. Get.
      Store.Value got = leaseA.get("greeting");
      check(got.found() && got.text().equals(valueA) && got.fence() == tokenA.getGeneration(),
          "get: expected '" + valueA + "' at fence " + tokenA.getGeneration() + ", got found=" + got.found() + " '" + got.text() + "' at fence " + got.fence());
      step("get: '" + got.text() + "'");

      // 4b. List: the resource's entries, in key order.
      java.util.List<Store.Entry> entries = a.store().list(resource, "");
      check(entries.stream().map(Store.Entry::key).toList().equals(java.util.List.of("batch-1", "greeting")) && entries.get(1).text().equals(valueA),
          "list: expected batch-1 and greeting ('" + valueA + "'), got " + entries);
      step("list: " + entries.size() + " entries, in key order");

      // 5. KeepAlive: the library renews the lease on its stream, every third of the TTL.
      Thread.sleep(HOLD_FOR.toMillis());
      check(leaseA.isHeld(), "keepalive: the lease was lost: " + leaseA.lost().getNow(null));
      check(renewals.get() >= 6, "keepalive: expected a renewal every 667 ms for 7 s, got " + renewals.get());
      Description described = a.describe(resource);
      check(described.held() && described.token().getGeneration() == tokenA.getGeneration(),
          "keepalive: expected " + resource + " still held by generation " + tokenA.getGeneration() + ", got " + described);
      step("keepalive: still held after " + HOLD_FOR.toMillis() + " ms (TTL 2s), " + renewals.get() + " renewals");

      // 6. Release.
      leaseA.release();
      check(leaseA.lost().getNow(null) != null && leaseA.lost().getNow(null).why() == LossCause.RELEASED, "release: lost() did not complete with RELEASED");
      step("release");

      // 7. Handover.
      Lease leaseB = b.acquire(resource, AcquireOptions.ttl(HELD_TTL));
      Token tokenB = leaseB.token();
      check(tokenB.getGeneration() > tokenA.getGeneration(),
          "handover: expected a generation greater than " + tokenA.getGeneration() + ", got " + tokenB.getGeneration());
      awaitHandover(observed, tokenA.getGeneration(), tokenB.getGeneration());
      step("handover: generation " + tokenB.getGeneration() + ", observed");

      // 8. Fencing: through A's released lease the write is refused locally; with A's token it is sent, and refused.
      String valueB = "hello from java-b";
      leaseB.put("greeting", valueB);
      expect(() -> leaseA.put("greeting", "stale"), LeaseLostException.class, null);
      StaleTokenException stale = expect(() -> a.store().put(tokenA, "greeting", bytes("stale"), WriteOptions.DEFAULT), StaleTokenException.class, "STALE_TOKEN");
      check(stale.fence() != null && stale.fence() == tokenB.getGeneration() && stale.generation() == tokenA.getGeneration(),
          "fencing: expected fence " + tokenB.getGeneration() + " and generation " + tokenA.getGeneration() + " in the error, got " + stale.metadata());
      got = leaseB.get("greeting");
      check(got.text().equals(valueB), "fencing: expected '" + valueB + "' after the refused put, got '" + got.text() + "'");
      step("fencing: old token refused with STALE_TOKEN");

      // 8b. Coalesced writes: 64 writes under B's token and 4 under A's stale one, all at once from one
      // client, each answered on its own; the client carries them in fewer calls than writes.
      coalesce(writer, writeCalls, resource, tokenB, tokenA);

      // Several resources, all or nothing (acquireAll), taken in the order of their names.
      multiLock(a, resource);

      // 9. Bad input.
      expect(() -> a.acquire("", AcquireOptions.ttl(TTL)), InvalidArgumentException.class, null);
      step("bad input: acquire with an empty resource: INVALID_ARGUMENT");
      expect(() -> a.acquire(resource + "-short", AcquireOptions.ttl(Duration.ofSeconds(1))), InvalidArgumentException.class, null);
      step("bad input: acquire with ttl 1s: INVALID_ARGUMENT");
      // The library always sends a token: the nearest to none is an empty one.
      expect(() -> a.store().put(Token.of(resource, 0, 0), "greeting", bytes("x"), WriteOptions.DEFAULT),
          InvalidArgumentException.class, null);
      step("bad input: put with an empty token: INVALID_ARGUMENT");
      expect(() -> a.renew(0x7fffffff00000001L), LeaseNotFoundException.class, "LEASE_NOT_FOUND");
      step("bad input: renew of an unknown lease: NOT_FOUND");
      ResourceHeldException held = expect(() -> a.acquire(resource, AcquireOptions.ttl(TTL).withHolder("java-c")), ResourceHeldException.class, "RESOURCE_HELD");
      check(held.holderToken() != null && held.holderToken().getGeneration() == tokenB.getGeneration() && "java-b".equals(held.holder()),
          "bad input: expected the holder java-b and its token in the error, got " + held.holder() + " " + held.holderToken());
      step("bad input: acquire of a held resource without waiting: ABORTED");

      // 10. Clean up.
      leaseB.release();
      step("clean up");
    }
    if (sessions) Sessions.run(server, credentials, resource);
  }

  private static final int COALESCED = 64;
  private static final int COALESCED_STALE = 4;

  /** Step 8b: the writes go on threads of their own, released together; their calls are counted by ClientEvent.WritesSent. */
  private static void coalesce(FencekeeperClient writer, AtomicInteger calls, String resource, Token current, Token stale) throws Exception {
    int n = COALESCED + COALESCED_STALE;
    Object[] answers = new Object[n];
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(n);
    calls.set(0);
    try {
      java.util.List<java.util.concurrent.Future<?>> done = new java.util.ArrayList<>();
      for (int i = 0; i < n; i++) {
        int w = i;
        done.add(threads.submit(() -> {
          go.await();
          boolean isStale = w >= COALESCED;
          String key = isStale ? "coalesce/stale-" + (w - COALESCED) : String.format("coalesce/w-%02d", w);
          try {
            answers[w] = writer.store().put(isStale ? stale : current, key, bytes("value " + w), WriteOptions.DEFAULT);
          } catch (FencekeeperException e) {
            answers[w] = e;
          }
          return null;
        }));
      }
      go.countDown();
      for (java.util.concurrent.Future<?> f : done) f.get(30, java.util.concurrent.TimeUnit.SECONDS);
    } finally {
      threads.shutdownNow();
    }
    int sent = calls.get();
    for (int i = 0; i < COALESCED; i++) {
      check(answers[i] instanceof Store.Commit c && c.fence() == current.getGeneration() && !c.replayed(),
          "coalesce: expected write " + i + " committed at fence " + current.getGeneration() + ", got " + describe(answers[i]));
    }
    java.util.Map<String, String> listed = new java.util.TreeMap<>();
    for (Store.Entry e : writer.store().list(resource, "coalesce/")) listed.put(e.key(), e.text());
    java.util.Map<String, String> expected = new java.util.TreeMap<>();
    for (int i = 0; i < COALESCED; i++) expected.put(String.format("coalesce/w-%02d", i), "value " + i);
    check(listed.equals(expected), "coalesce: expected the " + COALESCED + " keys with their own values and no stale one, got " + listed);
    step("coalesce: " + COALESCED + " concurrent writes, each answered on its own, in " + sent + " calls");
    for (int i = COALESCED; i < n; i++) {
      check(answers[i] instanceof StaleTokenException e && "STALE_TOKEN".equals(e.reason()) && e.fence() != null && e.fence() == current.getGeneration()
          && e.generation() != null && e.generation() == stale.getGeneration(),
          "coalesce: expected stale write " + (i - COALESCED) + " refused STALE_TOKEN at fence " + current.getGeneration() + ", got " + describe(answers[i]));
    }
    step("coalesce: " + COALESCED_STALE + " stale writes among them refused alone: STALE_TOKEN");
  }

  private static String describe(Object answer) {
    if (answer instanceof FencekeeperException e) return e.getClass().getSimpleName() + " " + e.code() + " " + e.reason() + " (" + e.getMessage() + ")";
    return String.valueOf(answer);
  }

  static FencekeeperClient client(String server, Credentials credentials, String holder, boolean sessions, java.util.function.Consumer<ClientEvent> events) {
    FencekeeperClient.Builder builder = FencekeeperClient.builder().servers(server).holder(holder).credentials(credentials).sessions(sessions);
    if (events != null) builder.onEvent(events);
    return builder.build();
  }

  /** Runs call and checks that it fails with an exception of type and, unless null, with that ErrorInfo reason. */
  /**
   * Three resources at once while one of them is held (refused, nothing left held, the one after the held
   * one in name order never tried), then once it is free (three leases, in the order asked).
   */
  static void multiLock(FencekeeperClient c, String resource) throws Exception {
    java.util.List<String> names = java.util.List.of(resource + "-m3", resource + "-m2", resource + "-m1");
    Lease held = c.acquire(names.get(1), AcquireOptions.ttl(TTL));
    expect(() -> c.acquireAll(names, AcquireOptions.ttl(TTL)), ResourceHeldException.class, "RESOURCE_HELD");
    Description m3 = c.describe(names.get(0));
    Description m1 = c.describe(names.get(2));
    check(!m3.held() && !m1.held(), "multi-lock: a refused acquireAll left a resource held");
    check(m3.lastIssued() == 0, "multi-lock: " + names.get(0) + ", after the held one in name order, was acquired");
    held.release();
    java.util.List<Lease> leases = c.acquireAll(names, AcquireOptions.ttl(TTL).waitAtMost(Duration.ofSeconds(10)));
    for (int i = 0; i < leases.size(); i++) {
      check(leases.get(i).token().getResource().equals(names.get(i)), "multi-lock: lease " + i + " is of " + leases.get(i).token().getResource());
      leases.get(i).release();
    }
    step("multi-lock: all or nothing over 3 resources, refused whole while one is held, granted once it is free");
  }

  static <T extends FencekeeperException> T expect(Call call, Class<T> type, String reason) throws Exception {
    try {
      call.run();
    } catch (FencekeeperException e) {
      check(type.isInstance(e) && (reason == null || reason.equals(e.reason())),
          "expected " + type.getSimpleName() + " " + (reason == null ? "" : reason) + ", got " + e.getClass().getSimpleName() + " " + e.code() + " "
              + e.reason() + " (" + e.getMessage() + ")");
      return type.cast(e);
    }
    throw new Unexpected("expected " + type.getSimpleName() + ", and the call succeeded");
  }

  /** Waits until the observer has seen generation a and then generation b hold the resource, with increasing revisions. */
  private static void awaitHandover(Observation observed, long a, long b) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    boolean seenA = false;
    long revision = 0;
    while (true) {
      Ownership o = observed.next(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      check(o != null, "handover: generation " + b + " (after " + a + ") not seen within 30s");
      check(o.revision() > revision, "handover: revision " + o.revision() + " after " + revision);
      revision = o.revision();
      if (o.held() && o.token().getGeneration() == a) {
        seenA = true;
      } else if (o.held() && o.token().getGeneration() == b) {
        check(seenA, "handover: generation " + b + " seen without generation " + a + " before it");
        return;
      }
    }
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new Unexpected(message);
  }

  static void step(String message) {
    System.out.println("ok " + message);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
