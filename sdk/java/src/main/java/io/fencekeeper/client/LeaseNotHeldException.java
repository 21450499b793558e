package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** LEASE_NOT_HELD (FENCE_MODE_LIVE): the token's lease is no longer held in etcd (it expired or was released). */
public class LeaseNotHeldException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public LeaseNotHeldException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  public String resource() {
    return metadata().get("resource");
  }

  public Long generation() {
    return number("generation");
  }

  public Long leaseId() {
    return number("lease_id");
  }
}
