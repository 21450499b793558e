// What a client reports to ClientOptions.onEvent as it keeps leases: for logs, metrics and tests.
import type { FencekeeperError, LeaseLostError } from "./errors.js";
import type { Token } from "./token.js";

export type ClientEvent =
  | { type: "acquired"; token: Token; ttlMs: number; validUntil: Date }
  | { type: "renewed"; token: Token; sentAt: Date; confirmedAt: Date; ttlMs: number; validUntil: Date }
  /** A renewal that proves nothing (e.g. etcd did not answer); the deadline stays where it was. */
  | { type: "renewal-failed"; token: Token; error: FencekeeperError }
  /** The lease can no longer be assumed held (why: deadline, not-found or fenced). */
  | { type: "lost"; error: LeaseLostError }
  /** The lease was given up: release(), or the acquire's signal aborted. */
  | { type: "released"; token: Token }
  /** One KeepAliveRequest went out, renewing `leases` leases. */
  | { type: "keepalive-sent"; url: string; leases: number }
  | { type: "stream-opened"; url: string }
  | { type: "stream-failed"; url: string; error: unknown; retryInMs: number };

export type EventSink = (event: ClientEvent) => void;

/** An EventSink that says whether anyone listens, so that events nobody reads are not even built. */
export interface Emitter extends EventSink {
  readonly listening: boolean;
}
