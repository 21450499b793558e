// The one place where etcd's failures become the domain's, by the type etcd3 gives each of them (one
// type per gRPC code, and a few of etcd's own). What etcd refuses because of the request is the
// caller's problem and never UNAVAILABLE; only a failure to reach etcd, or an answer that did not come,
// is worth a retry.
import {
  ClientClosedError,
  ClientRuntimeError,
  EtcdLeaseInvalidError,
  EtcdWatchStreamEnded,
  GRPCAbortedError,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCFailedPreconditionError,
  GRPCInternalError,
  GRPCInvalidArgumentError,
  GRPCOutOfRangeError,
  GRPCResourceExhastedError,
  GRPCUnavailableError,
  GRPCUnknownError,
} from "etcd3";
import { isBrokenCircuitError } from "cockatiel";
import { DomainError, unavailable } from "../errors/errors.js";

/** etcd has no such lease (any more): it expired, was revoked, or never existed. */
export class EtcdLeaseNotFound extends DomainError {
  constructor(what: string) {
    super("not_found", `${what}: the etcd lease is gone`, "LEASE_NOT_FOUND");
  }
}

/** etcd refused the request itself (too many operations, too large, a key twice): not retryable as is. */
export class EtcdRefused extends DomainError {
  constructor(what: string, cause: Error) {
    super("invalid_argument", `etcd refused the request (${what}): ${etcdMessage(cause)}`);
  }
}

/** An answer larger than this server accepts from etcd: read less at a time. */
export class EtcdResponseTooLarge extends DomainError {
  constructor(what: string, cause: Error) {
    super("resource_exhausted", `etcd's answer is too large (${what}): ${etcdMessage(cause)}`);
  }
}

/**
 * etcd is out of space: its database reached --quota-backend-bytes, it raised the NOSPACE alarm, and it
 * refuses every write (reads and deletes go on) until an operator frees space and disarms the alarm.
 * Not the caller's fault and not retryable by the caller: RESOURCE_EXHAUSTED, saying what to do.
 *
 * Not a promise that nothing was written: etcd applies a write it takes while its database crosses the
 * quota (before the alarm is raised) and answers it NOSPACE all the same (its quotaApplierV3), so the
 * writes in flight at that moment may have been applied, like a write answered UNAVAILABLE. Once the
 * alarm is raised, nothing is.
 */
export class EtcdNoSpace extends DomainError {
  constructor(what: string) {
    super(
      "resource_exhausted",
      `etcd is out of space and refuses writes (${what}): its database reached its --quota-backend-bytes. An operator must ` +
        "free space and disarm the alarm: compact (etcdctl compact), defragment (etcdctl defrag), then `etcdctl alarm disarm`; " +
        "or raise etcd's --quota-backend-bytes. A write in flight as etcd filled may have been applied all the same: " +
        "read before writing again, or send it again with its idempotency key once etcd has space",
      "ETCD_NO_SPACE",
    );
  }
}

/** Any failure of an etcd call, as the domain's error. */
export function classify(what: string, err: unknown): Error {
  if (err instanceof DomainError) return err;
  if (err instanceof EtcdLeaseInvalidError) return new EtcdLeaseNotFound(what);
  if (err instanceof GRPCInvalidArgumentError) return new EtcdRefused(what, err);
  if (err instanceof GRPCResourceExhastedError) return isNoSpace(err) ? new EtcdNoSpace(what) : new EtcdResponseTooLarge(what, err);
  if (err instanceof GRPCOutOfRangeError) return outOfRange(what, err);
  if (err instanceof GRPCFailedPreconditionError) {
    return new DomainError("failed_precondition", `etcd refused the request (${what}): ${etcdMessage(err)}`);
  }
  // grpc-js reports a call whose stream was reset without a status (etcd going away mid-request) as
  // INTERNAL: its outcome is unknown, as with any request that got no answer.
  if (
    err instanceof GRPCInternalError ||
    err instanceof GRPCUnavailableError ||
    err instanceof GRPCDeadlineExceededError ||
    err instanceof GRPCCancelledError ||
    err instanceof GRPCAbortedError ||
    err instanceof GRPCUnknownError ||
    err instanceof ClientClosedError ||
    err instanceof ClientRuntimeError ||
    err instanceof EtcdWatchStreamEnded
  ) {
    return unavailable(what, err);
  }
  // Every member's breaker is open (client.ts): each let its last call go unanswered, and this call was
  // sent to none of them.
  if (isBrokenCircuitError(err)) {
    return unavailable(what, new Error("no etcd member answered its last call; each is tried again within one --etcd-timeout"));
  }
  // Data loss, permission and the like: a fault, not something a retry would mend.
  return new DomainError("internal", `etcd failed (${what}): ${etcdMessage(err)}`);
}

/**
 * etcd answers RESOURCE_EXHAUSTED for its NOSPACE (rpctypes.ErrGRPCNoSpace), and grpc-js for an answer
 * over its receive limit: only the text tells them apart.
 */
function isNoSpace(err: Error): boolean {
  return err.message.includes("database space exceeded");
}

/**
 * etcd answers OUT_OF_RANGE for two reads of a revision: one it has compacted away (ErrCompacted),
 * and one it has not reached yet (ErrFutureRev). The code is shared; only the text tells them apart.
 */
function outOfRange(what: string, err: Error): DomainError {
  if (err.message.includes("required revision has been compacted")) {
    return new DomainError(
      "failed_precondition",
      `${what}: the snapshot this request reads has been compacted in etcd; start again without a page token`,
      "REVISION_COMPACTED",
    );
  }
  if (err.message.includes("required revision is a future revision")) {
    return new DomainError("out_of_range", `${what}: the request reads a revision etcd has not reached; pass a page token unchanged`);
  }
  return new DomainError("out_of_range", `etcd refused the request (${what}): ${etcdMessage(err)}`);
}

function etcdMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  // grpc-js prefixes "<code> <NAME>: "; etcd prefixes "etcdserver: " or "mvcc: ".
  return m.replace(/^\w+: \d+ [A-Z_]+: /, "").replace(/^\d+ [A-Z_]+: /, "");
}
