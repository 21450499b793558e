package io.fencekeeper.client;

import io.fencekeeper.v1.ObserveResponse;
import io.grpc.Context;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The ownership changes of one resource (FencekeeperClient.observe): first its state when the stream
 * started, then each change of holder, with increasing revisions. close() ends it.
 */
public final class Observation implements AutoCloseable {
  private final BlockingQueue<Object> changes = new LinkedBlockingQueue<>();
  private final Context.CancellableContext context;

  Observation(Context.CancellableContext context) {
    this.context = context;
  }

  /** The next state, or null if none came within timeout. Throws what ended the stream, once it ended. */
  public Ownership next(Duration timeout) throws InterruptedException {
    Object next = changes.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    if (next instanceof FencekeeperException e) {
      changes.add(e); // and again on every later call
      throw e;
    }
    return (Ownership) next;
  }

  @Override
  public void close() {
    context.cancel(null);
  }

  StreamObserver<ObserveResponse> observer() {
    return new StreamObserver<>() {
      @Override
      public void onNext(ObserveResponse x) {
        changes.add(new Ownership(x.getHeld(), x.getHeld() && !x.getHolder().isEmpty() ? x.getHolder() : null,
            x.hasToken() ? Protos.token(x.getToken()) : null, x.getRevision(), x.getHolderPrincipal(), x.getValue(),
            Protos.holders(x.getHoldersList()), Protos.holders(x.getJoinedList()), Protos.holders(x.getLeftList()), x.getMaxHolders(),
            x.hasLockDelay() ? Duration.ofSeconds(x.getLockDelay().getSeconds(), x.getLockDelay().getNanos()) : null,
            x.hasLockDelayUntil() ? Protos.instant(x.getLockDelayUntil()) : null));
      }

      @Override
      public void onError(Throwable error) {
        changes.add(Errors.from(error));
      }

      @Override
      public void onCompleted() {
        changes.add(Errors.unavailable("the server ended the Observe stream", null));
      }
    };
  }
}
