// Failures the domain reports, in the domain's words. The transport maps each kind to a gRPC code and
// each reason to a google.rpc.ErrorInfo (server/rpc/status.ts); nothing here knows about gRPC.

/** The reasons of ErrorReason in proto/fencekeeper/v1/errors.proto. */
export type Reason =
  | "STALE_TOKEN"
  | "LEASE_NOT_HELD"
  | "GENERATION_NOT_ISSUED"
  | "RESOURCE_HELD"
  | "LEASE_NOT_FOUND"
  | "IDEMPOTENCY_KEY_REUSED"
  | "ETCD_UNAVAILABLE"
  | "ALREADY_ACQUIRED"
  | "REVISION_COMPACTED"
  | "UNAUTHENTICATED"
  | "PERMISSION_DENIED"
  | "NOT_HOLDER"
  | "TOKEN_SIGNATURE_INVALID"
  | "LOCK_DELAY"
  | "SHARED_TOKEN"
  | "QUOTA_EXCEEDED"
  | "ETCD_NO_SPACE"
  | "BATCH_TOO_LARGE"
  | "MAX_HOLDERS_MISMATCH"
  | "PREEMPTED"
  | "LEASES_EXCEEDED"
  | "LEASE_BYTES_EXCEEDED"
  | "HISTORY_RATE_EXCEEDED"
  | "STREAMS_EXCEEDED"
  | "WAITERS_EXCEEDED"
  | "PREEMPTION_RATE_EXCEEDED";

export type Kind =
  | "invalid_argument"
  | "failed_precondition"
  | "aborted"
  | "not_found"
  | "deadline_exceeded"
  | "cancelled"
  | "unavailable"
  | "out_of_range"
  | "already_exists"
  | "resource_exhausted"
  | "unauthenticated"
  | "permission_denied"
  | "internal";

/** The token of a holder a refusal names: a Token (server/tokens/token.ts), signed or not, by what names it. */
export type HeldToken = { readonly resource: string; readonly generation: bigint; readonly leaseId: bigint; readonly mode?: "exclusive" | "shared" };

export class DomainError extends Error {
  constructor(
    readonly kind: Kind,
    message: string,
    readonly reason?: Reason,
    readonly metadata: Record<string, string> = {},
    /** A token worth returning with the error: the current holder's, for RESOURCE_HELD. */
    readonly token?: HeldToken,
  ) {
    super(message);
    this.name = "DomainError";
  }
}

export const invalid = (message: string) => new DomainError("invalid_argument", message);

export const unavailable = (what: string, cause: unknown) =>
  new DomainError(
    "unavailable",
    `etcd is unavailable (${what}: ${cause instanceof Error ? cause.message : String(cause)}); retry later` +
      ", with the same idempotency key for a mutation whose outcome you need",
    "ETCD_UNAVAILABLE",
  );

export const leaseNotFound = (leaseId: bigint) =>
  new DomainError(
    "not_found",
    `lease ${leaseId} is not held: it expired, was released, or never existed; acquire the resource again for a new token`,
    "LEASE_NOT_FOUND",
    { lease_id: String(leaseId) },
  );

/**
 * The lease (or session, or token) was acquired by another principal. Its owner is not named: a lease
 * or session id alone would otherwise tell any caller whose it is; an admin of the resource sees the
 * holder's principal in Describe.
 */
export const notHolder = (what: string, caller: string, metadata: Record<string, string>) =>
  new DomainError(
    "permission_denied",
    `${what} belongs to another principal, not to "${caller}": only the principal that acquired it may use it ` +
      "(an admin of the resource may also release it and write under its token)",
    "NOT_HOLDER",
    { ...metadata, principal: caller },
  );
