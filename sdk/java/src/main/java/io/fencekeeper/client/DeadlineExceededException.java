package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** DEADLINE_EXCEEDED: e.g. an acquire that waited as long as it was allowed to. */
public class DeadlineExceededException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public DeadlineExceededException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
