package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** UNAVAILABLE: no server answered, or etcd did not (reason ETCD_UNAVAILABLE). Retryable; a mutation may or may not have applied: retry it with the same idempotency key. */
public class UnavailableException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public UnavailableException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
