"""Connections to the server, and what a failed call tells, for the Python conformance client."""

from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from fencekeeper.v1 import lease_pb2_grpc, store_pb2_grpc


class Client:
    """One channel to the server with a stub of each service."""

    def __init__(self, server: str):
        if not server.startswith("http://"):
            raise ValueError(f"--server must look like http://host:port, got {server!r}")
        self.channel = grpc.insecure_channel(server.removeprefix("http://"))
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
