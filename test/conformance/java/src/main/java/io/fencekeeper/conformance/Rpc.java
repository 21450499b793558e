package io.fencekeeper.conformance;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.fencekeeper.v1.FencedStoreServiceGrpc;
import io.fencekeeper.v1.LeaseServiceGrpc;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.TlsChannelCredentials;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.MetadataUtils;
import java.io.File;
import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Connections to the server, and what a failed call tells. */
final class Rpc {
  private Rpc() {}

  /**
   * How a client proves who it is: a bearer JWT (sent as "authorization: Bearer <JWT>" on every call,
   * streams included), a client certificate (mutual TLS), both or neither. ca is the PEM CA that the
   * server's certificate must chain to; empty: the system's. Empty strings are unset.
   */
  record Auth(String bearer, String ca, String cert, String key) {
    static final Auth NONE = new Auth("", "", "", "");
  }

  /** One channel to the server with a stub of each service. */
  static final class Client implements AutoCloseable {
    final ManagedChannel channel;
    final LeaseServiceGrpc.LeaseServiceBlockingStub lease;
    final LeaseServiceGrpc.LeaseServiceStub leaseAsync;
    final FencedStoreServiceGrpc.FencedStoreServiceBlockingStub store;

    /**
     * Connects to a server given as http://host:port (gRPC over cleartext HTTP/2) or https://host:port
     * (gRPC over TLS), with the credentials of auth.
     */
    Client(String server, Auth auth) throws IOException {
      ChannelCredentials credentials;
      String target;
      if (server.startsWith("https://")) {
        TlsChannelCredentials.Builder tls = TlsChannelCredentials.newBuilder();
        if (!auth.ca().isEmpty()) tls.trustManager(new File(auth.ca()));
        if (!auth.cert().isEmpty() || !auth.key().isEmpty()) tls.keyManager(new File(auth.cert()), new File(auth.key()));
        credentials = tls.build();
        target = server.substring("https://".length());
      } else if (server.startsWith("http://")) {
        if (!auth.ca().isEmpty() || !auth.cert().isEmpty() || !auth.key().isEmpty()) {
          throw new IllegalArgumentException("--tls-ca, --tls-cert and --tls-key need an https:// server, got " + server);
        }
        credentials = InsecureChannelCredentials.create();
        target = server.substring("http://".length());
      } else {
        throw new IllegalArgumentException("--server must look like http://host:port or https://host:port, got " + server);
      }
      ManagedChannelBuilder<?> builder = Grpc.newChannelBuilder(target, credentials);
      if (!auth.bearer().isEmpty()) {
        // A header on every call rather than CallCredentials: the tests also run a cleartext server on loopback.
        Metadata headers = new Metadata();
        headers.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + auth.bearer());
        builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
      }
      channel = builder.build();
      lease = LeaseServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
      leaseAsync = LeaseServiceGrpc.newStub(channel);
      store = FencedStoreServiceGrpc.newBlockingStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** The status code of a failed call, and its google.rpc.ErrorInfo. */
  record Failure(String code, String reason, String domain) {}

  /**
   * Reads the status of a failed call, and the google.rpc.ErrorInfo among its details (decoded by
   * grpc-protobuf from the grpc-status-details-bin trailer).
   */
  static Failure failureOf(Throwable error) {
    String code = Status.fromThrowable(error).getCode().name();
    com.google.rpc.Status status = StatusProto.fromThrowable(error);
    if (status != null) {
      for (Any detail : status.getDetailsList()) {
        if (detail.is(ErrorInfo.class)) {
          try {
            ErrorInfo info = detail.unpack(ErrorInfo.class);
            return new Failure(code, info.getReason(), info.getDomain());
          } catch (InvalidProtocolBufferException e) {
            throw new IllegalStateException("ErrorInfo detail does not decode", e);
          }
        }
      }
    }
    return new Failure(code, "", "");
  }

  /** A step of the scenario did not go as SCENARIO.md says. */
  static final class Unexpected extends RuntimeException {
    Unexpected(String message) {
      super(message);
    }
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new Unexpected(message);
  }

  /** Runs call and checks that it fails with code and, unless empty, reason. */
  static void expectFailure(Runnable call, String code, String reason) {
    try {
      call.run();
    } catch (RuntimeException error) {
      if (error instanceof Unexpected) throw error;
      Failure f = failureOf(error);
      check(
          f.code().equals(code) && (reason.isEmpty() || f.reason().equals(reason)),
          "expected " + code + " " + reason + ", got " + f.code() + " " + f.reason() + " (" + error.getMessage() + ")");
      check(reason.isEmpty() || f.domain().equals("fencekeeper.io"), "expected ErrorInfo domain fencekeeper.io, got " + f.domain());
      return;
    }
    throw new Unexpected("expected " + code + ", and the call succeeded");
  }
}
