// How failures leave the server: a gRPC code a program can branch on, a google.rpc.ErrorInfo reason it
// can match, and a message a person can act on. Anything unexpected becomes INTERNAL without details.
import { create } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { DomainError, type Kind } from "../errors/errors.js";
import { FencingTokenSchema } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { tokenToProto } from "../wire/token-proto.js";
import { StatusSchema, type Status } from "../../gen/ts/google/rpc/status_pb.js";

/** The domain of every ErrorInfo fencekeeper sends. */
export const ERROR_DOMAIN = "fencekeeper.io";

const CODES: Record<Kind, Code> = {
  invalid_argument: Code.InvalidArgument,
  failed_precondition: Code.FailedPrecondition,
  aborted: Code.Aborted,
  not_found: Code.NotFound,
  deadline_exceeded: Code.DeadlineExceeded,
  cancelled: Code.Canceled,
  unavailable: Code.Unavailable,
  out_of_range: Code.OutOfRange,
  already_exists: Code.AlreadyExists,
  resource_exhausted: Code.ResourceExhausted,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  internal: Code.Internal,
};

/** The name of the gRPC code a kind of failure leaves with ("NotFound", "Unavailable", ...), as metrics label it. */
export const codeNameOf = (kind: Kind): string => Code[CODES[kind]];

/** The error as it leaves the server. An unexpected one becomes INTERNAL, with the error itself as its cause for the call's log line. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof DomainError) {
    const details = [];
    if (err.reason) {
      details.push({ desc: ErrorInfoSchema, value: { reason: err.reason, domain: ERROR_DOMAIN, metadata: err.metadata } });
    }
    if (err.token) details.push({ desc: FencingTokenSchema, value: tokenToProto(err.token) });
    return new ConnectError(err.message, CODES[err.kind], undefined, details);
  }
  if (err instanceof ConnectError) return err;
  return new ConnectError("internal error; the server log has the details", Code.Internal, undefined, undefined, err);
}

/** The same failure as a google.rpc.Status, for answers that carry a status per item (KeepAlive). */
export function toStatus(err: unknown, log: Logger): Status {
  const ce = toConnectError(err);
  if (ce.code === Code.Internal && ce.cause !== undefined) log.error({ err: ce.cause }, "unexpected error");
  return create(StatusSchema, {
    code: ce.code,
    message: ce.rawMessage,
    details: ce.details.flatMap((d) => ("desc" in d ? [anyPack(d.desc, create(d.desc, d.value))] : [])),
  });
}
