"""From what grpcio raises (a grpc.RpcError whose grpc-status-details-bin trailer holds a
google.rpc.Status with an ErrorInfo detail), or a google.rpc.Status inside a KeepAlive answer, to the
library's typed errors. The trailer is decoded here with the google.rpc protos that the stubs already
depend on, so no grpcio-status is needed."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2, status_pb2

from fencekeeper import errors
from fencekeeper.token import Token
from fencekeeper.v1 import errors_pb2, token_pb2

DOMAIN = "fencekeeper.io"

_R = errors_pb2.ErrorReason

_BY_REASON: dict[int, type[errors.FencekeeperError]] = {
    _R.STALE_TOKEN: errors.StaleTokenError,
    _R.LEASE_NOT_HELD: errors.LeaseNotHeldError,
    _R.GENERATION_NOT_ISSUED: errors.GenerationNotIssuedError,
    _R.RESOURCE_HELD: errors.ResourceHeldError,
    _R.LEASE_NOT_FOUND: errors.LeaseNotFoundError,
    _R.IDEMPOTENCY_KEY_REUSED: errors.IdempotencyKeyReusedError,
    _R.ETCD_UNAVAILABLE: errors.UnavailableError,
    # Answered to the client's own session acquisitions, which handle it.
    _R.ALREADY_ACQUIRED: errors.FencekeeperError,
    _R.REVISION_COMPACTED: errors.FencekeeperError,
    _R.UNAUTHENTICATED: errors.UnauthenticatedError,
    _R.PERMISSION_DENIED: errors.PermissionDeniedError,
    _R.NOT_HOLDER: errors.PermissionDeniedError,
    _R.TOKEN_SIGNATURE_INVALID: errors.InvalidArgumentError,
    _R.LOCK_DELAY: errors.LockDelayError,
    _R.SHARED_TOKEN: errors.InvalidArgumentError,
    _R.QUOTA_EXCEEDED: errors.FencekeeperError,
    _R.ETCD_NO_SPACE: errors.FencekeeperError,
    _R.BATCH_TOO_LARGE: errors.InvalidArgumentError,
    _R.MAX_HOLDERS_MISMATCH: errors.FencekeeperError,
    _R.PREEMPTED: errors.PreemptedError,
    _R.LEASES_EXCEEDED: errors.FencekeeperError,
    _R.LEASE_BYTES_EXCEEDED: errors.FencekeeperError,
    _R.HISTORY_RATE_EXCEEDED: errors.FencekeeperError,
    _R.STREAMS_EXCEEDED: errors.FencekeeperError,
    _R.WAITERS_EXCEEDED: errors.FencekeeperError,
    _R.PREEMPTION_RATE_EXCEEDED: errors.FencekeeperError,
}
"""The typed error of each reason of the generated ErrorReason enum (gen/python, from
proto/fencekeeper/v1/errors.proto). A reason added to the proto without an entry here fails the reasons
test of test/sdk/python.test.ts (probe.py reasons). NOT_FOUND without the reason LEASE_NOT_FOUND is no
LeaseNotFoundError: only the server says a lease is gone, and it says why."""

_BY_CODE: dict[grpc.StatusCode, type[errors.FencekeeperError]] = {
    grpc.StatusCode.UNAVAILABLE: errors.UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.TimeoutError,
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgumentError,
    grpc.StatusCode.CANCELLED: errors.CanceledError,
    grpc.StatusCode.UNAUTHENTICATED: errors.UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDeniedError,
}


def error_types() -> dict[str, str | None]:
    """The error class the library raises for each reason of the generated ErrorReason enum (None for a
    reason it has no entry for): for tests and docs (docs/client-semantics.md)."""
    return {
        name: (_BY_REASON[number].__name__ if number in _BY_REASON else None)
        for name, number in _R.items()
        if number != _R.ERROR_REASON_UNSPECIFIED
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
    number = _R.Value(reason) if reason and reason in _R.keys() else None
    cls = (_BY_REASON.get(number) if number else None) or _BY_CODE.get(code) or errors.FencekeeperError
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
