package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/**
 * Every failure the client reports: the gRPC status code, the google.rpc.ErrorInfo reason (see
 * proto/fencekeeper/v1/errors.proto, e.g. "STALE_TOKEN"; null when the server gave none) and its
 * metadata. Subclasses, one per thing a program may want to branch on, decode the metadata into fields.
 * Unchecked, like grpc-java's StatusRuntimeException.
 */
public class FencekeeperException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String reason;
  private final Map<String, String> metadata;

  public FencekeeperException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, cause);
    this.code = code;
    this.reason = reason;
    this.metadata = Map.copyOf(metadata);
  }

  /** The gRPC status code. */
  /** The typed exception of a gRPC status, as the client's calls throw it: for a program that also calls the generated stubs itself. */
  public static FencekeeperException fromStatus(Status status) {
    return Errors.from(status.asRuntimeException());
  }

  /**
   * The simple name of the exception class the client throws for each reason of the generated ErrorReason
   * enum (null for a reason it has no entry for): for tests and docs (docs/client-semantics.md).
   */
  public static Map<String, String> typesByReason() {
    return Errors.types();
  }

  public Status.Code code() {
    return code;
  }

  /** The ErrorInfo reason, e.g. "STALE_TOKEN"; null when the server gave none. */
  public String reason() {
    return reason;
  }

  /** The ErrorInfo metadata, as the server sent it. */
  public Map<String, String> metadata() {
    return metadata;
  }

  /** A metadata value as a number, or null when absent or not a number. */
  protected final Long number(String key) {
    String value = metadata.get(key);
    if (value == null || !value.matches("-?\\d+")) return null;
    return Long.parseLong(value);
  }
}
