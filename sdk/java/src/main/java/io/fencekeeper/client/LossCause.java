package io.fencekeeper.client;

/** Why a lease ended, as LeaseLostException.why() says. */
public enum LossCause {
  /** No renewal was confirmed before validUntil: a failed, refused or late renewal proves nothing. */
  DEADLINE,
  /** The server answered that the lease is gone (LEASE_NOT_FOUND). */
  NOT_FOUND,
  /** Another acquisition preempted it (the cause is a PreemptedException). */
  PREEMPTED,
  /** A write under the lease's token was refused (STALE_TOKEN or LEASE_NOT_HELD). */
  FENCED,
  /** This program released it (release(), close(), or the client's close()). */
  RELEASED,
  /** The acquire was canceled after the grant arrived. */
  CANCELED
}
