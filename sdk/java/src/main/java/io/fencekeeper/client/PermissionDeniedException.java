package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** PERMISSION_DENIED: the server's policy does not grant this (reason PERMISSION_DENIED), or the lease or token is another principal's (reason NOT_HOLDER). */
public class PermissionDeniedException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public PermissionDeniedException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
