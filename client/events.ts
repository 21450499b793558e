// What a client reports to ClientOptions.onEvent as it keeps leases: for logs, metrics and tests.
import type { FencekeeperError, LeaseLostError, LossCause } from "./errors.js";
import type { Token } from "./token.js";

export type ClientEvent =
  | { type: "acquired"; token: Token; ttlMs: number; validUntil: Date }
  /** A renewal of a lease of its own was confirmed. Leases on a session have "session-renewed" instead. */
  | { type: "renewed"; token: Token; sentAt: Date; confirmedAt: Date; ttlMs: number; validUntil: Date }
  /** A renewal that proves nothing (e.g. etcd did not answer); the deadline stays where it was. */
  | { type: "renewal-failed"; token: Token; error: FencekeeperError }
  /** The lease can no longer be assumed held (why: deadline, not-found or fenced). */
  | { type: "lost"; error: LeaseLostError }
  /** The lease was given up: release(), or the acquire's signal aborted. */
  | { type: "released"; token: Token }
  /** A session was opened (ClientOptions.sessions): the leases of one TTL are acquired on it. */
  | { type: "session-opened"; sessionId: bigint; ttlMs: number; validUntil: Date }
  /** A renewal of a session was confirmed: the validUntil of each of its `leases`. */
  | { type: "session-renewed"; sessionId: bigint; leases: number; sentAt: Date; confirmedAt: Date; ttlMs: number; validUntil: Date }
  /** A renewal of a session that proves nothing; its deadline, and its leases', stays where it was. */
  | { type: "session-renewal-failed"; sessionId: bigint; error: FencekeeperError }
  /**
   * A session ended, with every lease on it: lost ("deadline", "not-found"; each lease also reports
   * "lost"), or closed by client.close() ("released").
   */
  | { type: "session-ended"; sessionId: bigint; why: LossCause; leases: number }
  /** One KeepAliveRequest went out, renewing `leases` leases and sessions. */
  | { type: "keepalive-sent"; url: string; leases: number }
  | { type: "stream-opened"; url: string }
  | { type: "stream-failed"; url: string; error: unknown; retryInMs: number };

export type EventSink = (event: ClientEvent) => void;

/** An EventSink that says whether anyone listens, so that events nobody reads are not even built. */
export interface Emitter extends EventSink {
  readonly listening: boolean;
}
