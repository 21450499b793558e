package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** IDEMPOTENCY_KEY_REUSED: the idempotency key was used before with a different request. */
public class IdempotencyKeyReusedException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public IdempotencyKeyReusedException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  public String idempotencyKey() {
    return metadata().get("idempotency_key");
  }
}
