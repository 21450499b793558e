package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** CANCELLED: the caller gave up: a future canceled, or a thread interrupted. */
public class CanceledException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public CanceledException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
