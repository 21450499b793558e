package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** UNAUTHENTICATED: the server wants credentials and got none, or bad ones; the message says which. */
public class UnauthenticatedException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public UnauthenticatedException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }
}
