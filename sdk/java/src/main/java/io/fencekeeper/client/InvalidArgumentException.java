package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** INVALID_ARGUMENT without a reason of its own: a malformed name, key, TTL or token. */
public class InvalidArgumentException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public InvalidArgumentException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
