package io.fencekeeper.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.fencekeeper.v1.FencingToken;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import java.net.ConnectException;
import java.util.Map;

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
    if (reason != null) {
      switch (reason) {
        case "STALE_TOKEN": return new StaleTokenException(message, code, reason, metadata, cause);
        case "LEASE_NOT_HELD": return new LeaseNotHeldException(message, code, reason, metadata, cause);
        case "GENERATION_NOT_ISSUED": return new GenerationNotIssuedException(message, code, reason, metadata, cause);
        case "RESOURCE_HELD": return new ResourceHeldException(message, code, reason, metadata, detail(details, FencingToken.class), cause);
        case "LEASE_NOT_FOUND": return new LeaseNotFoundException(message, code, reason, metadata, cause);
        case "IDEMPOTENCY_KEY_REUSED": return new IdempotencyKeyReusedException(message, code, reason, metadata, cause);
        case "ETCD_UNAVAILABLE": return new UnavailableException(message, code, reason, metadata, cause);
        default: break;
      }
    }
    switch (code) {
      case UNAVAILABLE: return new UnavailableException(message, code, reason, metadata, cause);
      case DEADLINE_EXCEEDED: return new DeadlineExceededException(message, code, reason, metadata, cause);
      case INVALID_ARGUMENT: return new InvalidArgumentException(message, code, reason, metadata, cause);
      case CANCELLED: return new CanceledException(message, code, reason, metadata, cause);
      case NOT_FOUND: return new LeaseNotFoundException(message, code, reason, metadata, cause);
      case UNAUTHENTICATED: return new UnauthenticatedException(message, code, reason, metadata, cause);
      case PERMISSION_DENIED: return new PermissionDeniedException(message, code, reason, metadata, cause);
      default: return new FencekeeperException(message, code, reason, metadata, cause);
    }
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

  /** An exception the client raises itself, with no call behind it. */
  static UnavailableException unavailable(String message, Throwable cause) {
    return new UnavailableException(message, Status.Code.UNAVAILABLE, null, Map.of(), cause);
  }
}
