package io.fencekeeper.probe;

import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.FencekeeperException;
import io.fencekeeper.client.Store;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.UnavailableException;
import io.fencekeeper.client.WriteOptions;
import io.fencekeeper.v1.BatchRequest;
import io.fencekeeper.v1.BatchResponse;
import io.fencekeeper.v1.Commit;
import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.PutResponse;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Semantics step: a server that goes away while a Batch is on it (its calls cut off: shutdownNow when the
 * Batch arrives, with a Put still in flight; the writes are ten at once, so two go alone as Puts, the
 * first of which is answered, and the other eight in the Batch; with coalesceWrites(false) the
 * second Put takes the server down). No writer canceled anything, so none is told CanceledException:
 * each write cut off is an UnavailableException (it may or may not have applied), each answered one a commit.
 */
final class CutOff {
  private static final int WRITERS = 10;

  private CutOff() {}

  static String run() throws Exception {
    String on = once(true);
    String off = once(false);
    return "a server gone while writes are on it: each cut-off write is an UnavailableException, none CanceledException (" + on + " coalesced, " + off + " one call a write)";
  }

  /** The writes of one client, coalesced or one call a write (then the burst's second Put takes the server down). */
  private static String once(boolean coalesce) throws Exception {
    AtomicReference<Server> self = new AtomicReference<>();
    CountDownLatch batchArrived = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger burstPuts = new java.util.concurrent.atomic.AtomicInteger();
    FencedStoreServiceGrpc.FencedStoreServiceImplBase service = new FencedStoreServiceGrpc.FencedStoreServiceImplBase() {
      @Override
      public void put(PutRequest req, StreamObserver<PutResponse> out) {
        // "first" and the burst's first Put are answered at once, which frees a call for the Batch; the
        // burst's second Put waits for the Batch, and is cut off with it.
        if (!req.getKey().equals("first") && burstPuts.incrementAndGet() > 1) {
          try {
            if (!coalesce) batch(null, null);
            batchArrived.await(10, TimeUnit.SECONDS);
            Thread.sleep(10_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
        out.onNext(PutResponse.newBuilder().setCommit(Commit.newBuilder().setRevision(1).setFence(req.getMutation().getToken().getGeneration())).build());
        out.onCompleted();
      }

      @Override
      public void batch(BatchRequest req, StreamObserver<BatchResponse> out) {
        if (batchArrived.getCount() == 0) return;
        batchArrived.countDown();
        new Thread(() -> self.get().shutdownNow()).start();
      }
    };
    Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create()).addService(service).build().start();
    self.set(server);
    List<String> outcomes = new ArrayList<>();
    int commits = 0, cut = 0;
    ExecutorService threads = Executors.newFixedThreadPool(WRITERS);
    try (FencekeeperClient client = FencekeeperClient.builder().servers("http://127.0.0.1:" + server.getPort()).coalesceWrites(coalesce).build()) {
      Token token = Token.of("cut", 7, 1);
      client.store().put(token, "first", bytes(), WriteOptions.DEFAULT); // the connection is up
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Object>> answers = new ArrayList<>();
      for (int i = 0; i < WRITERS; i++) {
        String key = "k" + i;
        answers.add(threads.submit(() -> {
          go.await();
          try {
            return client.store().put(token, key, bytes(), WriteOptions.DEFAULT);
          } catch (FencekeeperException e) {
            return e;
          }
        }));
      }
      go.countDown();
      for (Future<Object> f : answers) {
        Object a = f.get(30, TimeUnit.SECONDS);
        if (a instanceof Store.Commit) {
          commits++;
        } else if (a instanceof UnavailableException u && u.reason() == null) {
          cut++;
        } else {
          outcomes.add(a instanceof FencekeeperException e ? e.getClass().getSimpleName() + " " + e.code() + ": " + e.getMessage() : String.valueOf(a));
        }
      }
    } finally {
      threads.shutdownNow();
      server.shutdownNow();
    }
    String how = coalesce ? "cut off (coalesced): " : "cut off (one call a write): ";
    Scenario.check(outcomes.isEmpty(), how + "expected each write committed or UnavailableException, got " + outcomes);
    Scenario.check(cut >= 2, how + "expected the writes in flight cut off, got " + cut + " UnavailableException and " + commits + " commits");
    return cut + " of " + WRITERS + " cut off";
  }

  private static byte[] bytes() {
    return "v".getBytes(StandardCharsets.UTF_8);
  }
}
