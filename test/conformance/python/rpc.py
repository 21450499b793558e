"""Connections to the server, and what a failed call tells, for the Python conformance client."""

import collections
from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from fencekeeper.v1 import lease_pb2_grpc, store_pb2_grpc


@dataclass(frozen=True)
class Auth:
    """How a client proves who it is: a bearer JWT, a client certificate, both or neither."""

    bearer: str = ""  # sent as "authorization: Bearer <JWT>" on every call, streams included
    ca: str = ""  # PEM CA that the server's certificate must chain to; empty: the system's
    cert: str = ""  # PEM client certificate (mutual TLS), with its key
    key: str = ""


def _read(path: str) -> bytes | None:
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


class _CallDetails(
    collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression")),
    grpc.ClientCallDetails,
):
    pass


class _Bearer(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Adds the Authorization header to every call. An interceptor rather than call credentials, which
    grpcio sends on TLS channels only: the tests also run a cleartext server on loopback."""

    def __init__(self, token: str):
        self._header = ("authorization", f"Bearer {token}")

    def _with_header(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        metadata = [*(d.metadata or ()), self._header]
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready, getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_header(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_header(details), request)

    def intercept_stream_unary(self, continuation, details, requests):
        return continuation(self._with_header(details), requests)

    def intercept_stream_stream(self, continuation, details, requests):
        return continuation(self._with_header(details), requests)


class Client:
    """One channel to the server with a stub of each service."""

    def __init__(self, server: str, auth: Auth = Auth()):
        if server.startswith("https://"):
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(auth.ca), private_key=_read(auth.key), certificate_chain=_read(auth.cert)
            )
            channel = grpc.secure_channel(server.removeprefix("https://"), credentials)
        elif server.startswith("http://"):
            if auth.ca or auth.cert or auth.key:
                raise ValueError(f"--tls-ca, --tls-cert and --tls-key need an https:// server, got {server!r}")
            channel = grpc.insecure_channel(server.removeprefix("http://"))
        else:
            raise ValueError(f"--server must look like http://host:port or https://host:port, got {server!r}")
        self.channel = grpc.intercept_channel(channel, _Bearer(auth.bearer)) if auth.bearer else channel
        self.lease = lease_pb2_grpc.LeaseServiceStub(self.channel)
        self.store = store_pb2_grpc.FencedStoreServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()


@dataclass
class Failure:
    code: str
    reason: str
    domain: str


def failure_of(error: grpc.RpcError) -> Failure:
    """The status code of a failed call, and the google.rpc.ErrorInfo among its details (decoded by
    grpcio-status from the grpc-status-details-bin trailer)."""
    failure = Failure(code=error.code().name, reason="", domain="")
    status = rpc_status.from_call(error)
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            failure.reason, failure.domain = info.reason, info.domain
    return failure


class Unexpected(Exception):
    """A step of the scenario did not go as SCENARIO.md says."""


def expect_failure(call, code: str, reason: str = "") -> None:
    """Runs call() and checks that it fails with code and, unless empty, reason."""
    try:
        call()
    except grpc.RpcError as error:
        failure = failure_of(error)
        if failure.code != code or (reason and failure.reason != reason):
            raise Unexpected(f"expected {code} {reason}, got {failure.code} {failure.reason} ({error.details()})")
        if reason and failure.domain != "fencekeeper.io":
            raise Unexpected(f"expected ErrorInfo domain fencekeeper.io, got {failure.domain!r}")
        return
    raise Unexpected(f"expected {code}, and the call succeeded")
