package io.fencekeeper.probe;

import io.fencekeeper.client.AcquireOptions;
import io.fencekeeper.client.Credentials;
import io.fencekeeper.client.DeadlineExceededException;
import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Lease;
import io.fencekeeper.client.LeaseLostException;
import io.fencekeeper.client.LossCause;
import io.fencekeeper.client.ResourceHeldException;
import io.fencekeeper.client.StaleTokenException;
import io.fencekeeper.client.FenceMode;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import io.fencekeeper.v1.AcquireMode;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.fencekeeper.v1.ReleaseRequest;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

/**
 * The library's own promises, one by one, against a real server (the probe's `semantics` subcommand):
 * release and try-with-resources, acquire that fails fast, waits at most a while, or is canceled by
 * its future or an interrupt without leaving a waiter behind, withLease on success, on error and on a
 * loss, a write refused by the fence ending the lease, loss listeners, and coalesced writes whose
 * writers give up (CoalescedCancel.java), whose server has no Batch (OldServer.java) or goes away
 * under them (CutOff.java).
 */
final class Semantics {
  private static final Duration TTL = Duration.ofSeconds(2);

  private Semantics() {}

  static void run(String server, Credentials credentials, String prefix) throws Exception {
    try (FencekeeperClient a = client(server, credentials, "java-a"); FencekeeperClient b = client(server, credentials, "java-b")) {
      String r = prefix + "-release";
      Lease released;
      try (Lease lease = a.acquire(r, AcquireOptions.ttl(TTL))) {
        released = lease;
        check(lease.isHeld() && a.describe(r).held(), "release: the lease is held before close");
      }
      check(!a.describe(r).held(), "release: try-with-resources released the lease on the server");
      LeaseLostException why = released.lost().getNow(null);
      check(why != null && why.why() == LossCause.RELEASED, "release: lost() completed with RELEASED, got " + why);
      released.release(); // idempotent, never throws
      AtomicReference<LeaseLostException> heard = new AtomicReference<>();
      released.addLossListener(heard::set);
      check(heard.get() == why, "release: a listener added after the loss ran at once");
      step("release: try-with-resources releases; release() again does nothing; a late listener runs at once");

      String held = prefix + "-held";
      try (Lease holder = a.acquire(held, AcquireOptions.ttl(TTL))) {
        ResourceHeldException busy = expect(() -> b.acquire(held, AcquireOptions.ttl(TTL)), ResourceHeldException.class);
        // As a caller that is not known to be its principal sees it (docs/verifying-tokens.md): no key id, no signature.
        io.fencekeeper.client.Token shown = busy.holderToken();
        check(shown.getResource().equals(holder.token().getResource()) && shown.getGeneration() == holder.token().getGeneration()
            && shown.getLeaseId() == holder.token().getLeaseId() && shown.getSignature().length == 0,
            "no wait: the error carries the holder's token, without its signature");
        step("acquire without waiting: ResourceHeldException with the holder's token");

        long started = System.nanoTime();
        expect(() -> b.acquire(held, AcquireOptions.ttl(TTL).waitAtMost(Duration.ofMillis(500))), DeadlineExceededException.class);
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        check(waited >= 450, "wait at most 500 ms: gave up after " + waited + " ms");
        eventually(() -> b.describe(held).waiters() == 0, "wait at most: no waiter left behind");
        step("acquire waiting at most 500 ms: DeadlineExceededException after " + waited + " ms, no waiter left");

        CompletableFuture<Lease> waiting = b.acquireAsync(held, AcquireOptions.ttl(TTL).waitForever());
        eventually(() -> b.describe(held).waiters() == 1, "acquireAsync: waits in line");
        waiting.cancel(true);
        eventually(() -> b.describe(held).waiters() == 0, "acquireAsync canceled: its place in line is given up");
        expect(waiting::join, CancellationException.class);
        step("acquireAsync canceled by its future: the wait in line is given up");

        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread thread = new Thread(() -> {
          try {
            outcome.set(new IllegalStateException("granted: " + b.acquire(held, AcquireOptions.ttl(TTL).waitForever())));
          } catch (Throwable e) {
            outcome.set(e);
          }
        });
        thread.start();
        eventually(() -> b.describe(held).waiters() == 1, "acquire in a thread: waits in line");
        thread.interrupt();
        thread.join(10_000);
        check(outcome.get() instanceof InterruptedException, "interrupted acquire: InterruptedException, got " + outcome.get());
        eventually(() -> b.describe(held).waiters() == 0, "interrupted acquire: its place in line is given up");
        step("acquire interrupted: InterruptedException, the wait in line is given up");
      }
      check(!b.describe(held).held(), "after the holder released, no canceled waiter was granted");

      String work = prefix + "-with";
      check(a.withLease(work, AcquireOptions.ttl(TTL), lease -> lease.put("k", "v").fence() == lease.token().getGeneration()), "withLease: returns the work's result");
      check(!a.describe(work).held(), "withLease: released after the work");
      IOException failure = expect(() -> a.withLease(work, AcquireOptions.ttl(TTL), lease -> {
        throw new IOException("work failed");
      }), IOException.class);
      check(failure.getMessage().equals("work failed") && !a.describe(work).held(), "withLease: rethrows the work's exception, released");
      // Another program releases the lease behind the holder's back: the next renewal answers NOT_FOUND.
      LeaseLostException lost = expect(() -> a.withLease(work, AcquireOptions.ttl(TTL), lease -> {
        releaseBehindItsBack(server, lease);
        Thread.sleep(TTL.toMillis());
        return null;
      }), LeaseLostException.class);
      check(lost.why() == LossCause.NOT_FOUND, "withLease: the lease lost during the work (NOT_FOUND), got " + lost.why());
      step("withLease: returns the result, rethrows the work's exception, throws LeaseLostException (NOT_FOUND) for a loss; releases each time");

      String fenced = prefix + "-fenced";
      // A TTL of 10 s: no renewal tells A of the release before its write does.
      Lease leaseA = a.acquire(fenced, AcquireOptions.ttl(Duration.ofSeconds(10)));
      AtomicReference<LeaseLostException> signal = new AtomicReference<>();
      leaseA.addLossListener(signal::set);
      releaseBehindItsBack(server, leaseA);
      try (Lease leaseB = b.acquire(fenced, AcquireOptions.ttl(TTL))) {
        leaseB.put("k", "by b");
        expect(() -> leaseA.put("k", "by a".getBytes(java.nio.charset.StandardCharsets.UTF_8), WriteOptions.mode(FenceMode.ORDER)), StaleTokenException.class);
        check(signal.get() != null && signal.get().why() == LossCause.FENCED && !leaseA.isHeld(), "fenced: the refused write ended the lease (FENCED), got " + signal.get());
        expect(() -> {
          leaseA.check();
          return null;
        }, LeaseLostException.class);
      }
      step("a write refused STALE_TOKEN ends the lease: FENCED, its listener ran, check() throws");

      step(CoalescedCancel.run(a, prefix + "-coalesced"));
      step(OldServer.run());
      step(CutOff.run());
    }
  }

  /** Another program (the raw stubs, on a channel of their own) releases the lease with its token. */
  private static void releaseBehindItsBack(String server, Lease lease) throws InterruptedException {
    ManagedChannel channel = ManagedChannelBuilder.forTarget(server.replaceFirst("^http://", "")).usePlaintext().build();
    try {
      LeaseServiceGrpc.newBlockingStub(channel).withDeadlineAfter(15, TimeUnit.SECONDS)
          .release(ReleaseRequest.newBuilder().setToken(wire(lease.token())).build());
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** The library's token as the wire carries it, for the raw stubs. */
  private static FencingToken wire(Token t) {
    return FencingToken.newBuilder().setResource(t.getResource()).setGeneration(t.getGeneration()).setLeaseId(t.getLeaseId())
        .setPrincipal(t.getPrincipal()).setKeyId(t.getKeyId()).setSignature(com.google.protobuf.ByteString.copyFrom(t.getSignature()))
        .setMode(t.isShared() ? AcquireMode.ACQUIRE_MODE_SHARED : AcquireMode.ACQUIRE_MODE_UNSPECIFIED).build();
  }

  private interface Call {
    Object run() throws Exception;
  }

  /** Leases of their own: these are the promises of a lease of its own (the scenario runs on sessions too). */
  private static FencekeeperClient client(String server, Credentials credentials, String holder) {
    return FencekeeperClient.builder().servers(server).holder(holder).credentials(credentials).sessions(false).build();
  }

  private static <T extends Throwable> T expect(Call call, Class<T> type) throws Exception {
    try {
      call.run();
    } catch (Throwable e) {
      Throwable t = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
      if (type.isInstance(t)) return type.cast(t);
      throw new Scenario.Unexpected("expected " + type.getSimpleName() + ", got " + t);
    }
    throw new Scenario.Unexpected("expected " + type.getSimpleName() + ", and the call succeeded");
  }

  private static void eventually(BooleanSupplier condition, String what) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) throw new Scenario.Unexpected(what + ": not within 10 s");
      Thread.sleep(50);
    }
  }

  private static void check(boolean condition, String message) {
    if (!condition) throw new Scenario.Unexpected(message);
  }

  private static void step(String message) {
    System.out.println("ok " + message);
  }
}
