package io.fencekeeper.client;

import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.FencedStoreServiceGrpc.FencedStoreServiceBlockingStub;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.fencekeeper.v1.LeaseServiceGrpc.LeaseServiceBlockingStub;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Runs one blocking call on the current server, as a typed exception when it fails. A server that
 * cannot be reached (UNAVAILABLE with no ErrorInfo) makes the next server current. The call is then
 * tried on each other server once if it is safe to repeat, or if it never left: the connection was
 * refused, so the server cannot have seen it. A call runs in the caller's gRPC Context: canceling
 * that context, or interrupting the thread, cancels the call.
 */
final class Calls {
  /** The stubs of one server, with the call's deadline applied. */
  record Stubs(String url, LeaseServiceBlockingStub lease, FencedStoreServiceBlockingStub store) {}

  private final Servers servers;
  /** The deadline of a call that does not wait. */
  final Duration timeout;

  Calls(Servers servers, Duration timeout) {
    this.servers = servers;
    this.timeout = timeout;
  }

  <T> T run(Function<Stubs, T> call, boolean repeatable) {
    return run(call, repeatable, timeout);
  }

  /** As run(call, repeatable), with a deadline of its own (null: none). */
  <T> T run(Function<Stubs, T> call, boolean repeatable, Duration deadline) {
    for (int tries = 1; ; tries++) {
      String url = servers.current();
      ManagedChannel channel = servers.channel(Servers.Use.CALLS, url);
      LeaseServiceBlockingStub lease = LeaseServiceGrpc.newBlockingStub(channel);
      FencedStoreServiceBlockingStub store = FencedStoreServiceGrpc.newBlockingStub(channel);
      if (deadline != null) {
        lease = lease.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
        store = store.withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS);
      }
      try {
        return call.apply(new Stubs(url, lease, store));
      } catch (StatusRuntimeException e) {
        FencekeeperException error = failure(url, e, tries, repeatable);
        if (error != null) throw error;
      }
    }
  }

  /**
   * What a call to url that failed with error on its tries-th try comes to: null when it is to be tried
   * on the (new) current server, else the typed exception. The one rule of run, for callers that send
   * without blocking (WriteBatcher).
   */
  FencekeeperException failure(String url, Throwable error, int tries, boolean repeatable) {
    if (!Errors.unreachable(error)) return Errors.from(error);
    servers.failed(url);
    if (!(repeatable || Errors.refused(error)) || tries >= servers.urls.size()) {
      return Errors.unavailable("no answer from the server at " + url + ": " + io.grpc.Status.fromThrowable(error).getDescription(), error);
    }
    return null;
  }

  /** The servers, for callers that send without blocking. */
  Servers servers() {
    return servers;
  }
}
