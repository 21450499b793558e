package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** GENERATION_NOT_ISSUED: the token names a generation never issued for the resource. */
public class GenerationNotIssuedException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public GenerationNotIssuedException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  public Long generation() {
    return number("generation");
  }

  /** The greatest generation issued for the resource. */
  public Long lastIssued() {
    return number("last_issued");
  }
}
