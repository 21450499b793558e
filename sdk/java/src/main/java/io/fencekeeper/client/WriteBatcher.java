package io.fencekeeper.client;

import io.fencekeeper.v1.BatchRequest;
import io.fencekeeper.v1.BatchResponse;
import io.fencekeeper.v1.BatchWrite;
import io.fencekeeper.v1.Commit;
import io.fencekeeper.v1.DeleteResponse;
import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.FencedStoreServiceGrpc.FencedStoreServiceStub;
import io.fencekeeper.v1.PutResponse;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Coalesces the concurrent puts and deletes of one client into FencedStoreService.Batch calls, with no
 * timer, by the rules of the TypeScript SDK (client/write-batcher.ts): a write that finds fewer than two
 * calls in flight goes out at once, as a plain Put or Delete when it is alone; the writes that arrive
 * while two calls are in flight wait, and the next free call carries all of them in one Batch (group
 * while busy, as the server's committer does towards etcd). Whichever thread finds room sends: a
 * writer, or the gRPC thread that took the answer of the call before; calls go out on the async stub,
 * so no thread blocks but the writers, each waiting for its own answer.
 *
 * <p>Each write gets exactly its own answer: its commit, or the typed exception its Put or Delete alone
 * would have thrown, idempotency keys included. A write's own gRPC Context (cancellation, deadline), its
 * thread's interrupt and the client's call timeout end only its own wait: one still queued is dropped
 * and was never sent; one sent alone has its call canceled; one inside a Batch is answered at once and
 * the Batch goes on for the others. A server older than Batch answers UNIMPLEMENTED: from then on each
 * write goes alone, and writes skip the batcher.
 */
final class WriteBatcher {
  /**
   * Calls in flight at once. Two, so that one batch is on its way while the server commits the other;
   * the server's committer keeps two etcd requests in flight for the same reason.
   */
  static final int CALLS_IN_FLIGHT = 2;
  /**
   * The encoded size of one Batch at most (keys, tokens and values): the server reads at most 4 MiB a
   * message, and the 2 MiB of values it allows leave room for 1000 writes' keys and tokens below it.
   */
  static final int MAX_BATCH_BYTES = 3 * 1024 * 1024 + 512 * 1024;

  private final Calls calls;
  /** Null when nobody listens. */
  private final Consumer<ClientEvent> events;
  private final ArrayDeque<Pending> queue = new ArrayDeque<>(); // guarded by this
  private int inFlight; // guarded by this
  /** False once a server answered Batch with UNIMPLEMENTED. */
  private volatile boolean batches = true;

  WriteBatcher(Calls calls, Consumer<ClientEvent> events) {
    this.calls = calls;
    this.events = events;
  }

  /** Whether writes still go through the batcher: false once a server said it has no Batch. */
  boolean batches() {
    return batches;
  }

  /** One write and its answer; its caller waits for that answer in write(). */
  private static final class Pending {
    final BatchWrite write;
    final int valueBytes;
    final int bytes;
    /** The writer's Context: a write sent alone is sent in it, so that it cancels the call as for a plain call. */
    final Context context;
    /** When the writer stops waiting (System.nanoTime()); bounded false: never. */
    final long deadline;
    final boolean bounded;
    final CompletableFuture<Commit> answer = new CompletableFuture<>();
    /** Set once its call alone has started (guarded by the batcher), so that giving up cancels it. */
    ClientCallStreamObserver<?> call;

    Pending(BatchWrite write, Context context, Duration timeout) {
      this.write = write;
      this.valueBytes = write.hasPut() ? write.getPut().getValue().size() : 0;
      this.bytes = write.getSerializedSize();
      this.context = context;
      long now = System.nanoTime();
      long left = Long.MAX_VALUE;
      if (timeout != null) left = timeout.toNanos();
      io.grpc.Deadline d = context.getDeadline();
      if (d != null) left = Math.min(left, d.timeRemaining(TimeUnit.NANOSECONDS));
      this.bounded = left != Long.MAX_VALUE;
      this.deadline = bounded ? now + left : 0;
    }

    long nanosLeft() {
      return Math.max(0, deadline - System.nanoTime());
    }
  }

  /** Sends one write, alone or in a Batch with others, and waits for its own answer. */
  Commit write(BatchWrite write) {
    Pending p = new Pending(write, Context.current(), calls.timeout);
    if (p.context.isCancelled()) throw endedBy(p.context, true);
    synchronized (this) {
      queue.add(p);
    }
    pump();
    return await(p);
  }

  private Commit await(Pending p) {
    Context.CancellationListener onCancel = c -> abandon(p, queued -> endedBy(c, queued));
    p.context.addListener(onCancel, Runnable::run);
    try {
      if (p.bounded) p.answer.get(p.nanosLeft(), TimeUnit.NANOSECONDS);
      else p.answer.get();
    } catch (InterruptedException e) {
      // As a blocking stub does: the call is canceled, CANCELLED is thrown, and the thread stays interrupted.
      abandon(p, queued -> new CanceledException(queued ? "the write was interrupted before it was sent" : "the write was interrupted; it may or may not have been applied",
          Status.Code.CANCELLED, null, Map.of(), e));
      Thread.currentThread().interrupt();
    } catch (TimeoutException e) {
      abandon(p, queued -> new DeadlineExceededException(queued ? "the write's deadline passed before it was sent" : "the write's deadline passed before its answer came; it may or may not have been applied",
          Status.Code.DEADLINE_EXCEEDED, null, Map.of(), null));
    } catch (ExecutionException e) {
      // Its own typed exception: thrown below.
    } finally {
      p.context.removeListener(onCancel);
    }
    try {
      return p.answer.getNow(null);
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) throw r;
      throw e;
    }
  }

  /** The writer gave up: its write leaves the queue, or its call alone is canceled; it is answered with error. */
  private void abandon(Pending p, Function<Boolean, FencekeeperException> error) {
    boolean queued;
    ClientCallStreamObserver<?> call;
    synchronized (this) {
      queued = queue.remove(p);
      call = p.call;
    }
    if (p.answer.completeExceptionally(error.apply(queued)) && call != null) call.cancel("the writer gave up on the write", null);
  }

  /** Sends what the queue holds while fewer than CALLS_IN_FLIGHT calls are in flight. */
  private void pump() {
    while (true) {
      List<Pending> batch;
      synchronized (this) {
        if (inFlight >= CALLS_IN_FLIGHT) return;
        batch = take();
        if (batch.isEmpty()) return;
        inFlight++;
      }
      if (batch.size() == 1) {
        sendAlone(batch.get(0), 1, this::finished);
      } else if (!batches) {
        for (Pending p : batch) sendAlone(p, 1, () -> {});
        finished();
      } else {
        sendBatch(batch, 1);
      }
    }
  }

  /** A call in flight ended. */
  private void finished() {
    synchronized (this) {
      inFlight--;
    }
    pump();
  }

  /** What one call may carry, from the front of the queue: at least one write. Guarded by this. */
  private List<Pending> take() {
    List<Pending> out = new ArrayList<>();
    int values = 0;
    int bytes = 0;
    while (!queue.isEmpty() && out.size() < Store.MAX_BATCH_WRITES) {
      Pending p = queue.peek();
      if (!out.isEmpty() && (values + p.valueBytes > Store.MAX_BATCH_VALUE_BYTES || bytes + p.bytes > MAX_BATCH_BYTES)) break;
      queue.poll();
      out.add(p);
      values += p.valueBytes;
      bytes += p.bytes;
    }
    return out;
  }

  /** One write as a plain Put or Delete, in its writer's Context; done runs once it is answered. */
  private void sendAlone(Pending p, int tries, Runnable done) {
    if (p.answer.isDone()) {
      done.run();
      return;
    }
    String url;
    FencedStoreServiceStub stub;
    try {
      url = calls.servers().current();
      stub = FencedStoreServiceGrpc.newStub(calls.servers().channel(Servers.Use.CALLS, url));
    } catch (RuntimeException e) {
      p.answer.completeExceptionally(Errors.from(e)); // the client is closed
      done.run();
      return;
    }
    if (p.bounded) stub = stub.withDeadlineAfter(p.nanosLeft(), TimeUnit.NANOSECONDS);
    sent(url, 1);
    FencedStoreServiceStub s = stub;
    if (p.write.hasPut()) {
      Alone<io.fencekeeper.v1.PutRequest, PutResponse> answer = new Alone<>(p, url, tries, done, PutResponse::getCommit);
      start(p, answer, () -> s.put(p.write.getPut(), answer));
    } else {
      Alone<io.fencekeeper.v1.DeleteRequest, DeleteResponse> answer = new Alone<>(p, url, tries, done, DeleteResponse::getCommit);
      start(p, answer, () -> s.delete(p.write.getDelete(), answer));
    }
  }

  private void start(Pending p, Alone<?, ?> answer, Runnable call) {
    try {
      p.context.run(call);
    } catch (RuntimeException e) {
      answer.onError(e);
      return;
    }
    ClientCallStreamObserver<?> started = answer.call;
    boolean gaveUp;
    synchronized (this) {
      p.call = started;
      gaveUp = p.answer.isDone();
    }
    // The writer gave up while the call started: abandon() saw no call to cancel.
    if (gaveUp && started != null) started.cancel("the writer gave up on the write", null);
  }

  /** The answer to a write sent alone. */
  private final class Alone<Q, R> implements ClientResponseObserver<Q, R> {
    private final Pending p;
    private final String url;
    private final int tries;
    private final Runnable done;
    private final Function<R, Commit> commit;
    volatile ClientCallStreamObserver<Q> call;
    private R response;
    private boolean ended; // guarded by this: done runs once

    Alone(Pending p, String url, int tries, Runnable done, Function<R, Commit> commit) {
      this.p = p;
      this.url = url;
      this.tries = tries;
      this.done = done;
      this.commit = commit;
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<Q> requestStream) {
      call = requestStream;
    }

    @Override
    public void onNext(R value) {
      response = value;
    }

    @Override
    public void onError(Throwable t) {
      if (!end()) return;
      if (!p.answer.isDone()) {
        FencekeeperException error = calls.failure(url, t, tries, false);
        if (error == null) {
          // It never left (the connection was refused): the next server gets it.
          sendAlone(p, tries + 1, done);
          return;
        }
        p.answer.completeExceptionally(p.context.isCancelled() ? error : Errors.cutOff(error));
      }
      done.run();
    }

    @Override
    public void onCompleted() {
      if (!end()) return;
      if (response == null) {
        p.answer.completeExceptionally(noAnswer("the server ended the call without an answer"));
      } else {
        p.answer.complete(commit.apply(response));
      }
      done.run();
    }

    private synchronized boolean end() {
      if (ended) return false;
      ended = true;
      return true;
    }
  }

  /** Several writes in one Batch call, outside any writer's Context: one writer giving up leaves the others be. */
  private void sendBatch(List<Pending> batch, int tries) {
    String url;
    FencedStoreServiceStub stub;
    try {
      url = calls.servers().current();
      stub = FencedStoreServiceGrpc.newStub(calls.servers().channel(Servers.Use.CALLS, url));
    } catch (RuntimeException e) {
      for (Pending p : batch) p.answer.completeExceptionally(Errors.from(e));
      finished();
      return;
    }
    if (calls.timeout != null) stub = stub.withDeadlineAfter(calls.timeout.toNanos(), TimeUnit.NANOSECONDS);
    BatchRequest.Builder req = BatchRequest.newBuilder();
    for (Pending p : batch) req.addWrites(p.write);
    BatchRequest built = req.build();
    sent(url, batch.size());
    Batched answer = new Batched(batch, url, tries);
    FencedStoreServiceStub s = stub;
    try {
      Context.ROOT.run(() -> s.batch(built, answer));
    } catch (RuntimeException e) {
      answer.onError(e);
    }
  }

  /** The answer to a Batch: one result a write, in order. */
  private final class Batched implements io.grpc.stub.StreamObserver<BatchResponse> {
    private final List<Pending> batch;
    private final String url;
    private final int tries;
    private BatchResponse response;
    private boolean ended; // guarded by this

    Batched(List<Pending> batch, String url, int tries) {
      this.batch = batch;
      this.url = url;
      this.tries = tries;
    }

    @Override
    public void onNext(BatchResponse value) {
      response = value;
    }

    @Override
    public void onCompleted() {
      if (!end()) return;
      for (int i = 0; i < batch.size(); i++) {
        Pending p = batch.get(i);
        if (response == null || i >= response.getResultsCount()) {
          p.answer.completeExceptionally(noAnswer("the server gave no answer for write " + i + " of a batch of " + batch.size()));
          continue;
        }
        io.fencekeeper.v1.BatchResult r = response.getResults(i);
        if (r.hasCommit()) p.answer.complete(r.getCommit());
        else p.answer.completeExceptionally(Errors.from(r.getError()));
      }
      finished();
    }

    @Override
    public void onError(Throwable t) {
      if (!end()) return;
      Status status = Status.fromThrowable(t);
      if (status.getCode() == Status.Code.UNIMPLEMENTED) {
        // A server without Batch applied none of them: each goes alone, and so does every write from now on.
        batches = false;
        List<Pending> rest;
        synchronized (WriteBatcher.this) {
          rest = new ArrayList<>(queue);
          queue.clear();
        }
        for (Pending p : batch) sendAlone(p, 1, () -> {});
        for (Pending p : rest) sendAlone(p, 1, () -> {});
        finished();
        return;
      }
      FencekeeperException error = calls.failure(url, t, tries, false);
      if (error == null) {
        // It never left: the next server gets what no writer gave up on meanwhile.
        List<Pending> left = batch.stream().filter(p -> !p.answer.isDone()).toList();
        if (left.isEmpty()) finished();
        else if (left.size() == 1) sendAlone(left.get(0), tries + 1, WriteBatcher.this::finished);
        else sendBatch(left, tries + 1);
        return;
      }
      // Each writer gets an exception of its own, so that what one does with it (a suppressed one, a
      // cause) is not seen by another.
      Supplier<FencekeeperException> each;
      if (error instanceof UnavailableException && error.reason() == null) {
        String message = error.getMessage();
        each = () -> Errors.unavailable(message, t);
      } else if (Errors.cutOff(error) != error) {
        // No writer cancels a Batch: a CANCELLED one was cut off under them, by a server that went away.
        each = () -> Errors.cutOff(Errors.from(t));
      } else {
        each = () -> Errors.from(t);
      }
      for (Pending p : batch) p.answer.completeExceptionally(each.get());
      finished();
    }

    private synchronized boolean end() {
      if (ended) return false;
      ended = true;
      return true;
    }
  }

  private void sent(String url, int writes) {
    if (events != null) events.accept(new ClientEvent.WritesSent(url, writes));
  }

  /** Why a writer stopped waiting when its Context ended: its deadline, or a cancellation. */
  private static FencekeeperException endedBy(Context context, boolean queued) {
    String applied = queued ? " before the write was sent" : "; the write may or may not have been applied";
    Throwable cause = context.cancellationCause(); // null: canceled with no cause
    io.grpc.Deadline deadline = context.getDeadline();
    if ((deadline != null && deadline.isExpired()) || cause instanceof TimeoutException
        || (cause != null && Status.fromThrowable(cause).getCode() == Status.Code.DEADLINE_EXCEEDED)) {
      return new DeadlineExceededException("the caller's deadline passed" + applied, Status.Code.DEADLINE_EXCEEDED, null, Map.of(), cause);
    }
    return new CanceledException("the caller's context was canceled" + applied, Status.Code.CANCELLED, null, Map.of(), cause);
  }

  private static FencekeeperException noAnswer(String message) {
    return new FencekeeperException(message, Status.Code.INTERNAL, null, Map.of(), null);
  }
}
