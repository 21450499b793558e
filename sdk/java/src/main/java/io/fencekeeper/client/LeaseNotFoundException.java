package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** LEASE_NOT_FOUND (NOT_FOUND): the lease expired, was released, or never existed. */
public class LeaseNotFoundException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public LeaseNotFoundException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  public Long leaseId() {
    return number("lease_id");
  }
}
