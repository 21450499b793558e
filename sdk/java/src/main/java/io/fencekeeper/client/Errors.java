package io.fencekeeper.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.fencekeeper.v1.ErrorReason;
import io.fencekeeper.v1.FencingToken;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.net.ConnectException;
import java.util.EnumMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * From what grpc-java raises (a StatusRuntimeException whose google.rpc.Status details hold an
 * ErrorInfo, decoded from the grpc-status-details-bin trailer) or a google.rpc.Status inside a
 * KeepAlive answer, to the client's typed exceptions.
 */
final class Errors {
  private Errors() {}

  /** Any failure of a call as a FencekeeperException. */
  static FencekeeperException from(Throwable error) {
    if (error instanceof FencekeeperException e) return e;
    Status status = Status.fromThrowable(error);
    com.google.rpc.Status details = StatusProto.fromThrowable(error);
    String message = status.getDescription() != null ? status.getDescription() : status.getCode().name();
    return of(status.getCode(), message, details, error);
  }

  /** A google.rpc.Status (e.g. KeepAliveResponse.error) as a FencekeeperException. */
  static FencekeeperException from(com.google.rpc.Status status) {
    Status.Code code = Status.fromCodeValue(status.getCode()).getCode();
    return of(code, status.getMessage().isEmpty() ? code.name() : status.getMessage(), status, null);
  }

  /** Whether a call failed because no server answered (UNAVAILABLE without an ErrorInfo: the transport's verdict, not etcd's). */
  static boolean unreachable(Throwable error) {
    return Status.fromThrowable(error).getCode() == Status.Code.UNAVAILABLE && info(StatusProto.fromThrowable(error)) == null;
  }

  /** Whether the connection was refused: the server cannot have seen the call. */
  static boolean refused(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof ConnectException) return true;
    }
    return false;
  }

  private static FencekeeperException of(Status.Code code, String message, com.google.rpc.Status details, Throwable cause) {
    ErrorInfo info = info(details);
    String reason = info == null || info.getReason().isEmpty() ? null : info.getReason();
    Map<String, String> metadata = info == null ? Map.of() : info.getMetadataMap();
    Factory typed = reason == null ? null : BY_REASON.get(reasonOf(reason));
    if (typed != null) return typed.make(message, code, reason, metadata, details, cause);
    switch (code) {
      case UNAVAILABLE: return new UnavailableException(message, code, reason, metadata, cause);
      case DEADLINE_EXCEEDED: return new DeadlineExceededException(message, code, reason, metadata, cause);
      case INVALID_ARGUMENT: return new InvalidArgumentException(message, code, reason, metadata, cause);
      case CANCELLED: return new CanceledException(message, code, reason, metadata, cause);
      case UNAUTHENTICATED: return new UnauthenticatedException(message, code, reason, metadata, cause);
      case PERMISSION_DENIED: return new PermissionDeniedException(message, code, reason, metadata, cause);
      default: return new FencekeeperException(message, code, reason, metadata, cause);
    }
  }

  /** Makes the typed exception of one reason. */
  @FunctionalInterface
  private interface Factory {
    FencekeeperException make(String message, Status.Code code, String reason, Map<String, String> metadata, com.google.rpc.Status details, Throwable cause);
  }

  /**
   * The typed exception of each reason of the generated ErrorReason enum (gen/java, from
   * proto/fencekeeper/v1/errors.proto). A reason added to the proto without an entry here fails the
   * reasons test of test/sdk/java.test.ts (the probe's "reasons"). NOT_FOUND without the reason
   * LEASE_NOT_FOUND is no LeaseNotFoundException: only the server says a lease is gone, and it says why.
   */
  private static final Map<ErrorReason, Factory> BY_REASON = new EnumMap<>(ErrorReason.class);

  static {
    BY_REASON.put(ErrorReason.STALE_TOKEN, (m, c, r, md, d, cause) -> new StaleTokenException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.LEASE_NOT_HELD, (m, c, r, md, d, cause) -> new LeaseNotHeldException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.GENERATION_NOT_ISSUED, (m, c, r, md, d, cause) -> new GenerationNotIssuedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.RESOURCE_HELD, (m, c, r, md, d, cause) -> new ResourceHeldException(m, c, r, md, Protos.token(detail(d, FencingToken.class)), cause));
    BY_REASON.put(ErrorReason.LEASE_NOT_FOUND, (m, c, r, md, d, cause) -> new LeaseNotFoundException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.IDEMPOTENCY_KEY_REUSED, (m, c, r, md, d, cause) -> new IdempotencyKeyReusedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.ETCD_UNAVAILABLE, (m, c, r, md, d, cause) -> new UnavailableException(m, c, r, md, cause));
    // Answered to the client's own session acquisitions, which handle it.
    BY_REASON.put(ErrorReason.ALREADY_ACQUIRED, Errors::plain);
    BY_REASON.put(ErrorReason.REVISION_COMPACTED, Errors::plain);
    BY_REASON.put(ErrorReason.UNAUTHENTICATED, (m, c, r, md, d, cause) -> new UnauthenticatedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.PERMISSION_DENIED, (m, c, r, md, d, cause) -> new PermissionDeniedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.NOT_HOLDER, (m, c, r, md, d, cause) -> new PermissionDeniedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.TOKEN_SIGNATURE_INVALID, (m, c, r, md, d, cause) -> new InvalidArgumentException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.LOCK_DELAY, (m, c, r, md, d, cause) -> new LockDelayException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.SHARED_TOKEN, (m, c, r, md, d, cause) -> new InvalidArgumentException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.QUOTA_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.ETCD_NO_SPACE, Errors::plain);
    BY_REASON.put(ErrorReason.BATCH_TOO_LARGE, (m, c, r, md, d, cause) -> new InvalidArgumentException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.MAX_HOLDERS_MISMATCH, Errors::plain);
    BY_REASON.put(ErrorReason.PREEMPTED, (m, c, r, md, d, cause) -> new PreemptedException(m, c, r, md, cause));
    BY_REASON.put(ErrorReason.LEASES_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.LEASE_BYTES_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.HISTORY_RATE_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.STREAMS_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.WAITERS_EXCEEDED, Errors::plain);
    BY_REASON.put(ErrorReason.PREEMPTION_RATE_EXCEEDED, Errors::plain);
  }

  private static FencekeeperException plain(String message, Status.Code code, String reason, Map<String, String> metadata, com.google.rpc.Status details, Throwable cause) {
    return new FencekeeperException(message, code, reason, metadata, cause);
  }

  private static ErrorReason reasonOf(String name) {
    try {
      return ErrorReason.valueOf(name);
    } catch (IllegalArgumentException e) {
      return null; // a reason newer than these stubs: mapped by its code
    }
  }

  /** The simple name of the exception class for each reason of the generated enum; null for a reason with no entry. */
  static Map<String, String> types() {
    Map<String, String> out = new TreeMap<>();
    for (ErrorReason r : ErrorReason.values()) {
      if (r == ErrorReason.ERROR_REASON_UNSPECIFIED || r == ErrorReason.UNRECOGNIZED) continue;
      Factory f = BY_REASON.get(r);
      out.put(r.name(), f == null ? null : f.make("", Status.Code.UNKNOWN, r.name(), Map.of(), null, null).getClass().getSimpleName());
    }
    return out;
  }

  private static ErrorInfo info(com.google.rpc.Status details) {
    return detail(details, ErrorInfo.class);
  }

  private static <T extends com.google.protobuf.Message> T detail(com.google.rpc.Status details, Class<T> type) {
    if (details == null) return null;
    for (Any any : details.getDetailsList()) {
      if (!any.is(type)) continue;
      try {
        return any.unpack(type);
      } catch (InvalidProtocolBufferException e) {
        return null; // a detail that does not decode tells nothing
      }
    }
    return null;
  }

  /**
   * A write call that ended CANCELLED, with no ErrorInfo, though its caller canceled nothing (the caller
   * checks that), was cut off under it: grpc-java reports a stream reset by a server that went away
   * (RST_STREAM CANCEL) so. The write may or may not have been applied, which is what
   * UnavailableException says; CanceledException would tell the caller it canceled.
   */
  static FencekeeperException cutOff(FencekeeperException e) {
    if (e.code() != Status.Code.CANCELLED || e.reason() != null || !(e.getCause() instanceof io.grpc.StatusRuntimeException)) return e;
    return new UnavailableException("the call was cut off (" + e.getMessage() + "); the write may or may not have been applied: retry it with the same idempotency key",
        Status.Code.UNAVAILABLE, null, Map.of(), e);
  }

  /** An exception the client raises itself, with no call behind it. */
  static UnavailableException unavailable(String message, Throwable cause) {
    return new UnavailableException(message, Status.Code.UNAVAILABLE, null, Map.of(), cause);
  }
}
