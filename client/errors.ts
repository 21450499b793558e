// The errors the SDK throws, one class per thing a program may want to branch on. Server failures carry
// the gRPC code, the ErrorInfo reason (see proto/fencekeeper/v1/errors.proto) and its metadata, decoded
// into typed fields; LeaseLostError is the client's own verdict on a lease.
import { Code } from "@connectrpc/connect";
import type { Token } from "./token.js";

export class FencekeeperError extends Error {
  constructor(
    message: string,
    /** The gRPC status code. */
    readonly code: Code,
    /** The google.rpc.ErrorInfo reason, e.g. "STALE_TOKEN"; undefined when the server gave none. */
    readonly reason?: string,
    readonly metadata: Readonly<Record<string, string>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

const bigintOf = (s: string | undefined): bigint | undefined => (s !== undefined && /^\d+$/.test(s) ? BigInt(s) : undefined);

/** STALE_TOKEN: a newer generation has written to the resource. The holder has lost its lease: stop. */
export class StaleTokenError extends FencekeeperError {
  readonly resource: string | undefined = this.metadata.resource;
  /** The resource's fence: the newer generation that has written. */
  readonly fence: bigint | undefined = bigintOf(this.metadata.fence);
  /** The refused generation. */
  readonly generation: bigint | undefined = bigintOf(this.metadata.generation);
}

/** LEASE_NOT_HELD (FENCE_MODE_LIVE): the token's lease is no longer held in etcd. */
export class LeaseNotHeldError extends FencekeeperError {
  readonly resource: string | undefined = this.metadata.resource;
  readonly generation: bigint | undefined = bigintOf(this.metadata.generation);
  readonly leaseId: bigint | undefined = bigintOf(this.metadata.lease_id);
}

/** GENERATION_NOT_ISSUED: the token names a generation never issued for the resource. */
export class GenerationNotIssuedError extends FencekeeperError {
  readonly generation: bigint | undefined = bigintOf(this.metadata.generation);
  readonly lastIssued: bigint | undefined = bigintOf(this.metadata.last_issued);
}

/** RESOURCE_HELD: Acquire without wait found the resource held. */
export class ResourceHeldError extends FencekeeperError {
  constructor(
    message: string,
    code: Code,
    reason: string,
    metadata: Record<string, string>,
    /** The current holder's token. */
    readonly holderToken?: Token,
  ) {
    super(message, code, reason, metadata);
  }
  /** The current holder's label. */
  readonly holder: string | undefined = this.metadata.holder;
}

/**
 * LOCK_DELAY: Acquire without wait found the resource in a lock-delay (AcquireOptions.lockDelay): its last
 * holder's lease expired, and nobody is granted it before `until`. A ResourceHeldError with no holder.
 */
export class LockDelayError extends ResourceHeldError {
  /** About when the delay ends (the server's estimate, within about a second). */
  readonly until: Date | undefined = this.metadata.lock_delay_until ? new Date(this.metadata.lock_delay_until) : undefined;
  /** The generation whose lease expired. */
  readonly generation: bigint | undefined = bigintOf(this.metadata.generation);
}

/** LEASE_NOT_FOUND: the lease expired, was released, or never existed. */
export class LeaseNotFoundError extends FencekeeperError {
  readonly leaseId: bigint | undefined = bigintOf(this.metadata.lease_id);
}

/**
 * PREEMPTED: a renewal answered that another acquisition preempted this lease's holding
 * (AcquireOptions.preempt): its writes are refused since, and it is renewed no more. The cause of the
 * LeaseLostError of a lease lost this way (why "preempted").
 */
export class PreemptedError extends FencekeeperError {
  readonly resource: string | undefined = this.metadata.resource;
  /** The preempted generation. */
  readonly generation: bigint | undefined = bigintOf(this.metadata.generation);
  /** The preemptor's generation (0 if the answer came while it was being granted). */
  readonly byGeneration: bigint | undefined = bigintOf(this.metadata.by_generation);
  /** The preemptor's principal; empty without authentication. */
  readonly byPrincipal: string | undefined = this.metadata.by_principal;
}

/** IDEMPOTENCY_KEY_REUSED: the key was used before with a different request. */
export class IdempotencyKeyReusedError extends FencekeeperError {
  readonly idempotencyKey: string | undefined = this.metadata.idempotency_key;
}

/** UNAVAILABLE: the server or etcd could not be reached. Retryable; a mutation may or may not have applied. */
export class UnavailableError extends FencekeeperError {}

/** DEADLINE_EXCEEDED: e.g. an Acquire that waited until its wait limit. */
export class TimeoutError extends FencekeeperError {}

/** INVALID_ARGUMENT without a reason: a malformed name, key, TTL or token. */
export class InvalidArgumentError extends FencekeeperError {}

/** CANCELED: the caller's signal aborted the call. */
export class CanceledError extends FencekeeperError {}

/** UNAUTHENTICATED: the server wants credentials (ClientOptions.credentials) and got none, or bad ones; the message says which. */
export class UnauthenticatedError extends FencekeeperError {}

/**
 * PERMISSION_DENIED: the server's policy does not grant this (reason PERMISSION_DENIED; metadata names
 * principal, verb and resource), or the lease or token is another principal's (reason NOT_HOLDER).
 */
export class PermissionDeniedError extends FencekeeperError {}

/** Why a lease ended, as LeaseLostError.why says. */
export type LossCause =
  /** No renewal was confirmed before validUntil: a failed, refused or late renewal proves nothing. */
  | "deadline"
  /** The server answered that the lease is gone (LEASE_NOT_FOUND). */
  | "not-found"
  /** Another acquisition preempted it (the cause is a PreemptedError). */
  | "preempted"
  /** A write under the lease's token was refused (STALE_TOKEN or LEASE_NOT_HELD). */
  | "fenced"
  /** This program released it. */
  | "released"
  /** The signal given to acquire() aborted. */
  | "canceled";

/**
 * The lease can no longer be assumed held: its signal's reason, and what every call through the lease
 * throws from then on. Do not retry with this token; acquire again for a new one.
 */
export class LeaseLostError extends FencekeeperError {
  constructor(
    message: string,
    readonly why: LossCause,
    readonly token: Token,
    /** The deadline the lease had when it ended. */
    readonly validUntil: Date,
    /** When the last renewal was confirmed (its answer arrived), or the Acquire's answer if none was. */
    readonly lastConfirmedAt: Date,
    /** When the client decided the lease was lost. */
    readonly lostAt: Date,
    options?: { cause?: unknown },
  ) {
    super(message, Code.FailedPrecondition, undefined, {}, options);
  }
}
