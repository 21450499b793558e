package io.fencekeeper.client;

import io.grpc.Status;
import java.time.Instant;
import java.util.Map;

/**
 * The client's verdict that a lease can no longer be assumed held: what Lease.lost() completes with,
 * what Lease.check() throws, and what every call through the lease throws from then on. Do not retry
 * with this token; acquire again for a new one.
 *
 * <p>The timeline it guards against: a holder acquires, then pauses (a GC, a SIGSTOP, a suspended VM)
 * past its TTL; etcd lets the lease go and another holder acquires and writes under a greater token.
 * When the first one runs again, its first look at the lease (check(), isHeld(), a write through it)
 * finds the deadline passed and throws this, before anything is sent. A write sent with the old token
 * anyway is refused by the fenced store with STALE_TOKEN.
 */
public class LeaseLostException extends FencekeeperException {
  private static final long serialVersionUID = 1L;

  private final LossCause why;
  private final transient Token token;
  private final Instant validUntil;
  private final Instant lastConfirmedAt;
  private final Instant lostAt;

  public LeaseLostException(String message, LossCause why, Token token, Instant validUntil, Instant lastConfirmedAt, Instant lostAt, Throwable cause) {
    super(message, Status.Code.FAILED_PRECONDITION, null, Map.of(), cause);
    this.why = why;
    this.token = token;
    this.validUntil = validUntil;
    this.lastConfirmedAt = lastConfirmedAt;
    this.lostAt = lostAt;
  }

  public LossCause why() {
    return why;
  }

  public Token token() {
    return token;
  }

  /** The deadline the lease had when it ended. */
  public Instant validUntil() {
    return validUntil;
  }

  /** When the last renewal was confirmed (its answer arrived), or the Acquire answered if none was. */
  public Instant lastConfirmedAt() {
    return lastConfirmedAt;
  }

  /** When the client decided the lease was lost. */
  public Instant lostAt() {
    return lostAt;
  }
}
