// From what the transport raises (a ConnectError with a google.rpc.ErrorInfo detail, or a
// google.rpc.Status inside a KeepAlive answer) to the SDK's typed errors.
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../common/error-info.js";
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
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReusedError,
  ETCD_UNAVAILABLE: UnavailableError,
};

const BY_CODE: Partial<Record<Code, Plain>> = {
  [Code.Unavailable]: UnavailableError,
  [Code.DeadlineExceeded]: TimeoutError,
  [Code.InvalidArgument]: InvalidArgumentError,
  [Code.Canceled]: CanceledError,
  [Code.NotFound]: LeaseNotFoundError,
  [Code.Unauthenticated]: UnauthenticatedError,
  [Code.PermissionDenied]: PermissionDeniedError,
};

/** Any failure of a call, as a FencekeeperError. */
export function toFencekeeperError(err: unknown): FencekeeperError {
  if (err instanceof FencekeeperError) return err;
  const ce = ConnectError.from(err);
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
