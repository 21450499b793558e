package io.fencekeeper.client;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import io.grpc.Context;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.function.BiFunction;

/**
 * FencedEndpoint as a gRPC ServerInterceptor, for calls that send one request message (unary and
 * server-streaming). resourceOf(fullMethodName, request) names the resource a call writes, or null for a
 * call that is not fenced. A refusal closes the call with the endpoint's code and a google.rpc.ErrorInfo
 * (domain fencekeeper.io; metadata resource, generation and, when stale, fence), as the fencekeeper
 * server sends them; the handler never runs. An admitted call's handler finds the token in TOKEN, and
 * holds the resource's turn until the call closes.
 */
public final class FencedServerInterceptor implements ServerInterceptor {
  /** The admitted token, in the handler: FencedServerInterceptor.TOKEN.get(). */
  public static final Context.Key<Token> TOKEN = Context.key("fencekeeper-fencing-token");
  private static final Metadata.Key<String> HEADER = Metadata.Key.of(FencedEndpoint.HEADER.toLowerCase(), Metadata.ASCII_STRING_MARSHALLER);

  private final FencedEndpoint endpoint;
  private final BiFunction<String, Object, String> resourceOf;

  public FencedServerInterceptor(FencedEndpoint endpoint, BiFunction<String, Object, String> resourceOf) {
    this.endpoint = endpoint;
    this.resourceOf = resourceOf;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    Iterable<String> values = headers.getAll(HEADER);
    String header = values == null ? null : String.join(", ", values); // two are one too many: joined, they do not parse
    AutoCloseable[] turn = {null};
    Runnable leave = () -> {
      AutoCloseable t = turn[0];
      turn[0] = null;
      if (t != null) {
        try {
          t.close();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
    };
    ServerCall<Q, R> closing = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
      @Override
      public void close(io.grpc.Status status, Metadata trailers) {
        try {
          super.close(status, trailers);
        } finally {
          leave.run();
        }
      }
    };
    ServerCall.Listener<Q> delegate = next.startCall(closing, headers);
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(delegate) {
      private Context admitted;
      private boolean refused;

      @Override
      public void onMessage(Q message) {
        if (refused) return;
        String resource = resourceOf.apply(call.getMethodDescriptor().getFullMethodName(), message);
        if (resource == null) {
          super.onMessage(message);
          return;
        }
        FencedEndpoint.Checked checked = endpoint.verify(header, resource);
        FencedEndpoint.Refusal refusal = checked.refusal();
        if (refusal == null) {
          turn[0] = endpoint.enter(resource);
          refusal = endpoint.admit(checked.token());
        }
        if (refusal != null) {
          refused = true;
          leave.run();
          StatusRuntimeException e = toStatus(refusal);
          call.close(e.getStatus(), e.getTrailers());
          return;
        }
        admitted = Context.current().withValue(TOKEN, checked.token());
        admitted.run(() -> super.onMessage(message));
      }

      @Override
      public void onHalfClose() {
        if (refused) return;
        if (admitted != null) admitted.run(super::onHalfClose);
        else super.onHalfClose();
      }

      @Override
      public void onCancel() {
        try {
          super.onCancel();
        } finally {
          leave.run();
        }
      }
    };
  }

  /** The refusal as the fencekeeper server would send it. */
  public static StatusRuntimeException toStatus(FencedEndpoint.Refusal r) {
    com.google.rpc.Status.Builder status = com.google.rpc.Status.newBuilder().setCode(r.code.value()).setMessage(r.message);
    if (r.reason != null) {
      ErrorInfo.Builder info = ErrorInfo.newBuilder().setReason(r.reason).setDomain("fencekeeper.io").putMetadata("resource", r.resource)
          .putMetadata("generation", Long.toString(r.generation));
      if (r.fence != 0) info.putMetadata("fence", Long.toString(r.fence));
      status.addDetails(Any.pack(info.build()));
    }
    return StatusProto.toStatusRuntimeException(status.build());
  }
}
