package io.fencekeeper.client;

import io.grpc.Status;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Map;

/**
 * LOCK_DELAY (ABORTED): an acquire without waiting found the resource in a lock-delay
 * (AcquireOptions.lockDelay, docs/lock-delay.md): its last holder's lease expired, and nobody is granted it
 * before until(). A ResourceHeldException with no holder.
 */
public final class LockDelayException extends ResourceHeldException {
  private static final long serialVersionUID = 1L;

  public LockDelayException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, null, cause);
  }

  /** About when the delay ends (the server's estimate, within about a second); null if not sent. */
  public Instant until() {
    String value = metadata().get("lock_delay_until");
    if (value == null) return null;
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /** The generation whose lease expired, or -1. */
  public long generation() {
    try {
      return Long.parseLong(metadata().getOrDefault("generation", "-1"));
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
