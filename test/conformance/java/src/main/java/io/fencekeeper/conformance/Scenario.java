package io.fencekeeper.conformance;

import static io.fencekeeper.conformance.Rpc.check;
import static io.fencekeeper.conformance.Rpc.expectFailure;

import com.google.protobuf.ByteString;
import com.google.protobuf.Duration;
import io.fencekeeper.conformance.Rpc.Auth;
import io.fencekeeper.conformance.Rpc.Client;
import io.fencekeeper.conformance.Rpc.Unexpected;
import io.fencekeeper.v1.AcquireRequest;
import io.fencekeeper.v1.AcquireResponse;
import io.fencekeeper.v1.DescribeRequest;
import io.fencekeeper.v1.DescribeResponse;
import io.fencekeeper.v1.FenceMode;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.GetRequest;
import io.fencekeeper.v1.GetResponse;
import io.fencekeeper.v1.KeepAliveRequest;
import io.fencekeeper.v1.KeepAliveResponse;
import io.fencekeeper.v1.Mutation;
import io.fencekeeper.v1.ObserveRequest;
import io.fencekeeper.v1.ObserveResponse;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.PutResponse;
import io.fencekeeper.v1.ReleaseRequest;
import io.fencekeeper.v1.RenewRequest;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The scenario of test/conformance/SCENARIO.md, with grpc-java and the generated stubs. */
final class Scenario {
  private static final Duration TTL = Duration.newBuilder().setSeconds(2).build();
  private static final long KEEPALIVE_EVERY_MS = 600;
  private static final long KEEPALIVE_FOR_MS = 7000;

  private Scenario() {}

  private static void step(String message) {
    System.out.println("ok " + message);
  }

  private static ByteString text(String s) {
    return ByteString.copyFrom(s, StandardCharsets.UTF_8);
  }

  static void run(String server, Auth auth, String resource) throws Exception {
    try (Client a = new Client(server, auth);
        Client b = new Client(server, auth);
        Client observer = new Client(server, auth)) {
      run(a, b, observer, resource);
    }
  }

  private record BadInput(String name, String code, String reason, Runnable call) {}

  private static void run(Client a, Client b, Client observer, String resource) throws Exception {
    // 1. Observe.
    BlockingQueue<ObserveResponse> observed = new LinkedBlockingQueue<>();
    observer.leaseAsync.observe(ObserveRequest.newBuilder().setResource(resource).build(), new StreamObserver<>() {
      @Override public void onNext(ObserveResponse message) { observed.add(message); }
      @Override public void onError(Throwable error) {}
      @Override public void onCompleted() {}
    });
    ObserveResponse first = observed.poll(10, TimeUnit.SECONDS);
    check(first != null && !first.getHeld(), "observe: expected " + resource + " not held at first, got " + first);
    step("observe: " + resource + " not held");

    // 2. Acquire.
    AcquireResponse acquired = a.lease.acquire(AcquireRequest.newBuilder().setResource(resource).setTtl(TTL).setHolder("java-a").build());
    FencingToken tokenA = acquired.getToken();
    check(
        tokenA.getResource().equals(resource) && tokenA.getGeneration() > 0 && acquired.getTtl().getSeconds() == 2,
        "acquire: expected a token for " + resource + " with a positive generation and ttl 2s, got " + tokenA + " ttl " + acquired.getTtl());
    step("acquire: generation " + tokenA.getGeneration() + ", lease " + tokenA.getLeaseId());

    // 3. Put.
    String valueA = "hello from java-a";
    PutResponse put = a.store.put(PutRequest.newBuilder()
        .setResource(resource).setKey("greeting").setValue(text(valueA))
        .setMutation(Mutation.newBuilder().setToken(tokenA).setMode(FenceMode.FENCE_MODE_ORDER).setIdempotencyKey(resource + "-put-a"))
        .build());
    check(put.getCommit().getFence() == tokenA.getGeneration(),
        "put: expected fence " + tokenA.getGeneration() + ", got " + put.getCommit().getFence());
    step("put: fence " + put.getCommit().getFence());

    // 4. Get.
    GetResponse got = a.store.get(GetRequest.newBuilder().setResource(resource).setKey("greeting").build());
    check(got.getFound() && got.getValue().toStringUtf8().equals(valueA) && got.getFence() == tokenA.getGeneration(),
        "get: expected '" + valueA + "' at fence " + tokenA.getGeneration() + ", got found=" + got.getFound()
            + " '" + got.getValue().toStringUtf8() + "' at fence " + got.getFence());
    step("get: '" + got.getValue().toStringUtf8() + "'");

    // 5. KeepAlive.
    keepAlive(a, tokenA);
    DescribeResponse described = a.lease.describe(DescribeRequest.newBuilder().setResource(resource).build());
    check(described.getHeld() && described.getToken().getGeneration() == tokenA.getGeneration(),
        "keepalive: expected " + resource + " still held by generation " + tokenA.getGeneration() + ", got held="
            + described.getHeld() + " generation " + described.getToken().getGeneration());
    step("keepalive: still held after " + KEEPALIVE_FOR_MS + " ms (TTL 2s)");

    // 6. Release.
    a.lease.release(ReleaseRequest.newBuilder().setToken(tokenA).build());
    step("release");

    // 7. Handover.
    FencingToken tokenB = b.lease.acquire(AcquireRequest.newBuilder().setResource(resource).setTtl(TTL).setHolder("java-b").build()).getToken();
    check(tokenB.getGeneration() > tokenA.getGeneration(),
        "handover: expected a generation greater than " + tokenA.getGeneration() + ", got " + tokenB.getGeneration());
    awaitHandover(observed, tokenA.getGeneration(), tokenB.getGeneration());
    step("handover: generation " + tokenB.getGeneration() + ", observed");

    // 8. Fencing.
    String valueB = "hello from java-b";
    b.store.put(PutRequest.newBuilder().setResource(resource).setKey("greeting").setValue(text(valueB))
        .setMutation(Mutation.newBuilder().setToken(tokenB)).build());
    PutRequest stale = PutRequest.newBuilder().setResource(resource).setKey("greeting").setValue(text("stale"))
        .setMutation(Mutation.newBuilder().setToken(tokenA)).build();
    expectFailure(() -> a.store.put(stale), "FAILED_PRECONDITION", "STALE_TOKEN");
    got = a.store.get(GetRequest.newBuilder().setResource(resource).setKey("greeting").build());
    check(got.getValue().toStringUtf8().equals(valueB),
        "fencing: expected '" + valueB + "' after the refused put, got '" + got.getValue().toStringUtf8() + "'");
    step("fencing: old token refused with STALE_TOKEN");

    // 9. Bad input.
    List<BadInput> badInputs = List.of(
        new BadInput("acquire with an empty resource", "INVALID_ARGUMENT", "",
            () -> a.lease.acquire(AcquireRequest.newBuilder().setResource("").setTtl(TTL).build())),
        new BadInput("acquire with ttl 1s", "INVALID_ARGUMENT", "",
            () -> a.lease.acquire(AcquireRequest.newBuilder().setResource(resource + "-short")
                .setTtl(Duration.newBuilder().setSeconds(1)).build())),
        new BadInput("put without a token", "INVALID_ARGUMENT", "",
            () -> a.store.put(PutRequest.newBuilder().setResource(resource).setKey("greeting").setValue(text("x")).build())),
        new BadInput("renew of an unknown lease", "NOT_FOUND", "LEASE_NOT_FOUND",
            () -> a.lease.renew(RenewRequest.newBuilder().setLeaseId(0x7fffffff00000001L).build())),
        new BadInput("acquire of a held resource without waiting", "ABORTED", "RESOURCE_HELD",
            () -> a.lease.acquire(AcquireRequest.newBuilder().setResource(resource).setTtl(TTL).setHolder("java-c").build())));
    for (BadInput bad : badInputs) {
      try {
        expectFailure(bad.call(), bad.code(), bad.reason());
      } catch (Unexpected e) {
        throw new Unexpected("bad input: " + bad.name() + ": " + e.getMessage());
      }
      step("bad input: " + bad.name() + ": " + bad.code());
    }

    // 10. Clean up.
    b.lease.release(ReleaseRequest.newBuilder().setToken(tokenB).build());
    step("clean up");
  }

  /**
   * Renews the lease of token over one KeepAlive stream every KEEPALIVE_EVERY_MS for KEEPALIVE_FOR_MS,
   * and checks every answer.
   */
  private static void keepAlive(Client client, FencingToken token) throws Exception {
    CompletableFuture<Void> done = new CompletableFuture<>();
    AtomicInteger answers = new AtomicInteger();
    StreamObserver<KeepAliveRequest> requests = client.leaseAsync.keepAlive(new StreamObserver<KeepAliveResponse>() {
      @Override public void onNext(KeepAliveResponse answer) {
        if (answer.getLeaseId() != token.getLeaseId() || !answer.hasTtl() || answer.hasError()) {
          done.completeExceptionally(new Unexpected("keepalive: expected a renewal of lease " + token.getLeaseId() + ", got " + answer));
        }
        answers.incrementAndGet();
      }
      @Override public void onError(Throwable error) { done.completeExceptionally(error); }
      @Override public void onCompleted() { done.complete(null); }
    });
    int sent = 0;
    for (long deadline = System.nanoTime() + KEEPALIVE_FOR_MS * 1_000_000; System.nanoTime() < deadline; sent++) {
      requests.onNext(KeepAliveRequest.newBuilder().setLeaseId(token.getLeaseId()).build());
      Thread.sleep(KEEPALIVE_EVERY_MS);
    }
    requests.onCompleted();
    try {
      done.get(10, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof Unexpected u) throw u;
      throw new Unexpected("keepalive: the stream failed: " + e.getCause());
    }
    check(answers.get() == sent, "keepalive: sent " + sent + " renewals, got " + answers.get() + " answers");
  }

  /** Waits until the observer has seen generation a and then generation b hold the resource, with increasing revisions. */
  private static void awaitHandover(BlockingQueue<ObserveResponse> observed, long a, long b) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    boolean seenA = false;
    long revision = 0;
    while (true) {
      ObserveResponse message = observed.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      check(message != null, "handover: generation " + b + " (after " + a + ") not seen within 5s");
      check(message.getRevision() > revision, "handover: revision " + message.getRevision() + " after " + revision);
      revision = message.getRevision();
      if (message.getHeld() && message.getToken().getGeneration() == a) {
        seenA = true;
      } else if (message.getHeld() && message.getToken().getGeneration() == b) {
        check(seenA, "handover: generation " + b + " seen without generation " + a + " before it");
        return;
      }
    }
  }
}
