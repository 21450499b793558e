package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** STALE_TOKEN: a newer generation has written to the resource. The holder has lost its lease: stop, and do not retry with this token. */
public class StaleTokenException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public StaleTokenException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  /** The resource written to. */
  public String resource() {
    return metadata().get("resource");
  }

  /** The resource's fence: the newer generation that has written. */
  public Long fence() {
    return number("fence");
  }

  /** The refused generation. */
  public Long generation() {
    return number("generation");
  }
}
