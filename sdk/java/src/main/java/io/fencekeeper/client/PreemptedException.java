package io.fencekeeper.client;

import io.grpc.Status;
import java.util.Map;

/**
 * PREEMPTED (FAILED_PRECONDITION): a renewal answered that another acquisition preempted the lease's
 * holding (AcquireOptions.withPreempt, docs/preemption.md): its writes are refused since, and it is
 * renewed no more. The cause of the LeaseLostException of a lease lost this way (LossCause.PREEMPTED).
 */
public class PreemptedException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  public PreemptedException(String message, Status.Code code, String reason, Map<String, String> metadata, Throwable cause) {
    super(message, code, reason, metadata, cause);
  }

  public String resource() {
    return metadata().get("resource");
  }

  /** The preempted generation. */
  public Long generation() {
    return number("generation");
  }

  /** The preemptor's generation (0 if the answer came while it was being granted). */
  public Long byGeneration() {
    return number("by_generation");
  }

  /** The preemptor's principal; empty without authentication. */
  public String byPrincipal() {
    return metadata().get("by_principal");
  }
}
