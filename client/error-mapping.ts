// From what the transport raises (a ConnectError with a google.rpc.ErrorInfo detail, or a
// google.rpc.Status inside a KeepAlive answer) to the SDK's typed errors.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../gen/ts/google/rpc/error_details_pb.js";
import { FencingTokenSchema } from "../gen/ts/fencekeeper/v1/token_pb.js";
import type { Status } from "../gen/ts/google/rpc/status_pb.js";
import {
  CanceledError,
  FencekeeperError,
  GenerationNotIssuedError,
  IdempotencyKeyReusedError,
  InvalidArgumentError,
  LeaseNotFoundError,
  LeaseNotHeldError,
  LockDelayError,
  PreemptedError,
  PermissionDeniedError,
  ResourceHeldError,
  StaleTokenError,
  TimeoutError,
  UnauthenticatedError,
  UnavailableError,
} from "./errors.js";
import { tokenFromProto } from "./token.js";

type Plain = new (message: string, code: Code, reason?: string, metadata?: Record<string, string>, options?: { cause?: unknown }) => FencekeeperError;

const BY_REASON: Record<string, Plain> = {
  STALE_TOKEN: StaleTokenError,
  LEASE_NOT_HELD: LeaseNotHeldError,
  GENERATION_NOT_ISSUED: GenerationNotIssuedError,
  LEASE_NOT_FOUND: LeaseNotFoundError,
  PREEMPTED: PreemptedError,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReusedError,
  ETCD_UNAVAILABLE: UnavailableError,
};

const BY_CODE: Partial<Record<Code, Plain>> = {
  [Code.Unavailable]: UnavailableError,
  [Code.DeadlineExceeded]: TimeoutError,
  [Code.InvalidArgument]: InvalidArgumentError,
  [Code.Canceled]: CanceledError,
  [Code.Unauthenticated]: UnauthenticatedError,
  [Code.PermissionDenied]: PermissionDeniedError,
};

/**
 * Node's errors for a connection or stream that broke under a call. connect reports them as ABORTED,
 * which reads as a refusal; the call may well have been applied, so the SDK says UNAVAILABLE.
 */
const CONNECTION_LOST = new Set([
  "ECONNRESET",
  "EPIPE",
  "ERR_STREAM_DESTROYED",
  "ERR_HTTP2_INVALID_STREAM",
  "ERR_HTTP2_STREAM_ERROR",
  "ERR_HTTP2_SESSION_ERROR",
  "ERR_HTTP2_GOAWAY_SESSION",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

function connectionLost(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string" && CONNECTION_LOST.has(code)) return code;
  }
  return undefined;
}

/** Any failure of a call, as a FencekeeperError. */
export function toFencekeeperError(err: unknown): FencekeeperError {
  if (err instanceof FencekeeperError) return err;
  const ce = ConnectError.from(err);
  const lost = ce.code === Code.Aborted && ce.findDetails(ErrorInfoSchema).length === 0 ? connectionLost(err) : undefined;
  if (lost) {
    const message = `the connection to the server broke during the call (${ce.rawMessage || lost}); the call may or may not have been applied: retry a write with the same idempotency key`;
    return new UnavailableError(message, Code.Unavailable, undefined, {}, { cause: err });
  }
  const info = ce.findDetails(ErrorInfoSchema).at(0);
  const reason = info?.reason || undefined;
  const metadata = { ...(info?.metadata ?? {}) };
  const message = ce.rawMessage || Code[ce.code];
  if (reason === "RESOURCE_HELD") {
    const holder = ce.findDetails(FencingTokenSchema)[0];
    return new ResourceHeldError(message, ce.code, reason, metadata, holder ? tokenFromProto(holder) : undefined);
  }
  if (reason === "LOCK_DELAY") return new LockDelayError(message, ce.code, reason, metadata);
  const Class = (reason && BY_REASON[reason]) || BY_CODE[ce.code] || FencekeeperError;
  return new Class(message, ce.code, reason, metadata, { cause: err });
}

/** A google.rpc.Status (e.g. KeepAliveResponse.error) as a FencekeeperError. */
export function statusToError(status: Status): FencekeeperError {
  const ce = new ConnectError(status.message, status.code as Code);
  ce.details = status.details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value }));
  return toFencekeeperError(ce);
}
