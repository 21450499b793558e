"""From what grpcio raises (a grpc.RpcError whose grpc-status-details-bin trailer holds a
google.rpc.Status with an ErrorInfo detail), or a google.rpc.Status inside a KeepAlive answer, to the
library's typed errors. The trailer is decoded here with the google.rpc protos that the stubs already
depend on, so no grpcio-status is needed."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2

from fencekeeper import errors
from fencekeeper.token import Token
from fencekeeper.v1 import token_pb2

DOMAIN = "fencekeeper.io"

_BY_REASON: dict[str, type[errors.FencekeeperError]] = {
    "STALE_TOKEN": errors.StaleTokenError,
    "LEASE_NOT_HELD": errors.LeaseNotHeldError,
    "GENERATION_NOT_ISSUED": errors.GenerationNotIssuedError,
    "RESOURCE_HELD": errors.ResourceHeldError,
    "LEASE_NOT_FOUND": errors.LeaseNotFoundError,
    "IDEMPOTENCY_KEY_REUSED": errors.IdempotencyKeyReusedError,
    "ETCD_UNAVAILABLE": errors.UnavailableError,
}

_BY_CODE: dict[grpc.StatusCode, type[errors.FencekeeperError]] = {
    grpc.StatusCode.UNAVAILABLE: errors.UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.TimeoutError,
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgumentError,
    grpc.StatusCode.CANCELLED: errors.CanceledError,
    grpc.StatusCode.NOT_FOUND: errors.LeaseNotFoundError,
    grpc.StatusCode.UNAUTHENTICATED: errors.UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDeniedError,
}

_CODES = {c.value[0]: c for c in grpc.StatusCode}


def status_of(error: grpc.RpcError) -> status_pb2.Status | None:
    """The google.rpc.Status of a failed call's grpc-status-details-bin trailer, if it has one."""
    trailers = error.trailing_metadata() if isinstance(error, grpc.Call) else None
    for key, value in trailers or ():
        if key == "grpc-status-details-bin" and isinstance(value, bytes):
            status = status_pb2.Status()
            status.ParseFromString(value)
            return status
    return None


def from_status(status: status_pb2.Status, cause: BaseException | None = None) -> errors.FencekeeperError:
    """A google.rpc.Status as the typed error its code and ErrorInfo reason say."""
    code = _CODES.get(status.code, grpc.StatusCode.UNKNOWN)
    reason: str | None = None
    metadata: dict[str, str] = {}
    holder: Token | None = None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            if info.domain == DOMAIN:
                reason, metadata = info.reason or None, dict(info.metadata)
        elif detail.Is(token_pb2.FencingToken.DESCRIPTOR):
            t = token_pb2.FencingToken()
            detail.Unpack(t)
            holder = Token.from_proto(t)
    cls = (_BY_REASON.get(reason) if reason else None) or _BY_CODE.get(code) or errors.FencekeeperError
    error = cls(status.message or code.name, code, reason, metadata)
    if isinstance(error, errors.ResourceHeldError):
        error.holder_token = holder
    error.__cause__ = cause
    return error


def from_rpc_error(error: grpc.RpcError) -> errors.FencekeeperError:
    """Any failed call, as a FencekeeperError."""
    status = status_of(error)
    if status is None:
        call = error if isinstance(error, grpc.Call) else None
        code = call.code() if call else grpc.StatusCode.UNKNOWN
        status = status_pb2.Status(code=code.value[0], message=(call.details() if call else None) or str(error))
    return from_status(status, error)


def unreachable(error: grpc.RpcError) -> bool:
    """UNAVAILABLE with no ErrorInfo: the transport's verdict that the server could not be reached (not
    etcd's, which comes with reason ETCD_UNAVAILABLE)."""
    return isinstance(error, grpc.Call) and error.code() == grpc.StatusCode.UNAVAILABLE and status_of(error) is None


def refused(error: grpc.RpcError) -> bool:
    """The connection was refused or never made: the server cannot have seen the call."""
    details = (error.details() if isinstance(error, grpc.Call) else "") or ""
    return "Connection refused" in details or "failed to connect" in details.lower()
