package io.fencekeeper.client;

import java.time.Duration;
import java.time.Instant;

/**
 * What a client reports to FencekeeperClient.Builder.onEvent as it keeps leases: for logs, metrics and
 * tests. Listeners run on the client's keep-alive thread (or the thread that noticed a loss; WritesSent:
 * the thread that sent the call): keep them short, and do not block in them.
 */
public sealed interface ClientEvent {
  /** A lease was granted. */
  record Acquired(Token token, Duration ttl, Instant validUntil) implements ClientEvent {}

  /** A renewal was confirmed: the lease may be assumed held until validUntil (sentAt + ttl - drift margin). */
  record Renewed(Token token, Instant sentAt, Instant confirmedAt, Duration ttl, Instant validUntil) implements ClientEvent {}

  /** A renewal that proves nothing (e.g. etcd did not answer); the deadline stays where it was. token: null for a session's. */
  record RenewalFailed(Token token, FencekeeperException error) implements ClientEvent {}

  /** The lease can no longer be assumed held (why: DEADLINE, NOT_FOUND or FENCED). */
  record Lost(LeaseLostException error) implements ClientEvent {}

  /** The lease was given up: release(), close(), or a canceled acquire. */
  record Released(Token token) implements ClientEvent {}

  /** A session was opened (FencekeeperClient.Builder.sessions): its id is the lease_id of every token on it. */
  record SessionOpened(long sessionId, Duration ttl, Instant validUntil) implements ClientEvent {}

  /** A session's renewal was confirmed: every lease on it (leases) may be assumed held until validUntil. */
  record SessionRenewed(long sessionId, Instant sentAt, Instant confirmedAt, Duration ttl, Instant validUntil, int leases) implements ClientEvent {}

  /** A session ended, and the leases on it with it (why: DEADLINE, NOT_FOUND, or RELEASED by close()). */
  record SessionEnded(long sessionId, LossCause why, int leases) implements ClientEvent {}

  /**
   * One write call went out to the server at url: a Put or a Delete (writes 1), or a Batch carrying that
   * many puts and deletes (Store.batch, or concurrent writes coalesced: FencekeeperClient.Builder.coalesceWrites).
   * Sent by the thread that sends the call: a writer's, or a gRPC thread.
   */
  record WritesSent(String url, int writes) implements ClientEvent {}

  /** One KeepAliveRequest went out, renewing that many leases. */
  record KeepAliveSent(String url, int leases) implements ClientEvent {}

  /** The KeepAlive stream was opened on a server. */
  record StreamOpened(String url) implements ClientEvent {}

  /** The KeepAlive stream failed; it is opened again (on the next server) after retryIn. */
  record StreamFailed(String url, Throwable error, Duration retryIn) implements ClientEvent {}
}
