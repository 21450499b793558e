package io.fencekeeper.probe;

import io.fencekeeper.client.FencekeeperClient;
import io.fencekeeper.client.Store;
import io.fencekeeper.client.Token;
import io.fencekeeper.client.WriteOptions;
import io.fencekeeper.v1.Commit;
import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.PutResponse;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Semantics step: a server of the contract before Batch (Put answers after 50 ms, so that concurrent
 * writes queue behind two in flight; Batch is UNIMPLEMENTED). The client tries one Batch, then sends
 * each write alone, and every later write too: each still gets its own commit.
 */
final class OldServer {
  private OldServer() {}

  static String run() throws Exception {
    Queue<String> seen = new ConcurrentLinkedQueue<>();
    FencedStoreServiceGrpc.FencedStoreServiceImplBase service = new FencedStoreServiceGrpc.FencedStoreServiceImplBase() {
      @Override
      public void put(PutRequest req, StreamObserver<PutResponse> out) {
        try {
          Thread.sleep(50);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        out.onNext(PutResponse.newBuilder().setCommit(Commit.newBuilder().setRevision(1).setFence(req.getMutation().getToken().getGeneration())).build());
        out.onCompleted();
      }
    };
    ServerInterceptor count = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        seen.add(call.getMethodDescriptor().getBareMethodName());
        return next.startCall(call, headers);
      }
    };
    Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create()).addService(ServerInterceptors.intercept(service, count)).build().start();
    try (FencekeeperClient client = FencekeeperClient.builder().servers("http://127.0.0.1:" + server.getPort()).build()) {
      Token token = Token.of("old", 7, 1);
      burst(client, token, "k", 10);
      long batches = seen.stream().filter("Batch"::equals).count();
      long puts = seen.stream().filter("Put"::equals).count();
      Scenario.check(batches == 1 && puts == 10, "old server: expected one Batch tried, then 10 Puts; the server saw " + seen);
      burst(client, token, "again", 5);
      batches = seen.stream().filter("Batch"::equals).count();
      puts = seen.stream().filter("Put"::equals).count();
      Scenario.check(batches == 1 && puts == 15, "old server: expected the later writes as Puts alone (15 in all, one Batch); the server saw " + seen);
    } finally {
      server.shutdownNow();
    }
    return "against a server without Batch: one Batch tried (UNIMPLEMENTED), then every write alone, each with its own commit";
  }

  /** n writes at once, each of which must commit at the token's generation. */
  private static void burst(FencekeeperClient client, Token token, String prefix, int n) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(n);
    CountDownLatch go = new CountDownLatch(1);
    try {
      List<Future<Store.Commit>> commits = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String key = prefix + i;
        commits.add(threads.submit(() -> {
          go.await();
          return client.store().put(token, key, "v".getBytes(StandardCharsets.UTF_8), WriteOptions.DEFAULT);
        }));
      }
      go.countDown();
      for (Future<Store.Commit> c : commits) {
        Store.Commit commit = c.get(30, TimeUnit.SECONDS);
        Scenario.check(commit.fence() == token.getGeneration(), "old server: expected a commit at fence " + token.getGeneration() + ", got " + commit);
      }
    } finally {
      threads.shutdownNow();
    }
  }
}
