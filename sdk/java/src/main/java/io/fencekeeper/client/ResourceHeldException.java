package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/** RESOURCE_HELD (ABORTED): acquire without waiting found the resource held by another generation. */
public class ResourceHeldException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  private final transient Token holderToken;

  public ResourceHeldException(String message, Status.Code code, String reason, Map<String, String> metadata, Token holderToken, Throwable cause) {
    super(message, code, reason, metadata, cause);
    this.holderToken = holderToken;
  }

  /** The current holder's label. */
  public String holder() {
    return metadata().get("holder");
  }

  /** The current holder's token, or null when the server sent none. */
  public Token holderToken() {
    return holderToken;
  }
}
