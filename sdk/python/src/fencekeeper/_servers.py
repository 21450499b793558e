"""The fencekeeper servers a client may talk to: replicas sharing one etcd, any of which serves any call.
A failed server makes the next one current. Each server gets two channels, opened on first use: one for
calls and one for the KeepAlive stream, so that dropping a hung stream's connection leaves the calls on
the other be. Calls are run here too: a server that cannot be reached makes the next one current, and the
call is tried on each other server once if it is safe to repeat, or if it never left."""

from __future__ import annotations

import collections
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence, TypeVar

import grpc

from fencekeeper._error_mapping import from_rpc_error, refused, unreachable
from fencekeeper.errors import UnavailableError
from fencekeeper.v1 import lease_pb2_grpc, store_pb2_grpc

T = TypeVar("T")
Channel = Literal["calls", "stream"]

_URL = re.compile(r"^https?://[^/\s]+/?$")


@dataclass(frozen=True)
class Credentials:
    """How the client proves who it is to a server with authentication on (docs/authentication.md)."""

    bearer: str | Callable[[], str] | None = None
    """A JWT sent as `authorization: Bearer ...` with every call, streams included; or a function giving
    the current one (called per call: keep it cheap). Sent over cleartext too, for a loopback server."""
    root_certificates: bytes | None = None
    """For https:// servers: the PEM CA the server's certificate must chain to (default: the system's)."""
    certificate_chain: bytes | None = None
    """For mutual TLS: the PEM client certificate, presented in the handshake, and its key."""
    private_key: bytes | None = None


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
    """Adds the Authorization header to every call: an interceptor rather than call credentials, which
    grpcio sends on TLS channels only."""

    def __init__(self, token: str | Callable[[], str]):
        self._token = token

    def _with_header(self, d: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        token = self._token() if callable(self._token) else self._token
        metadata = [*(d.metadata or ()), ("authorization", f"Bearer {token}")]
        return _CallDetails(d.method, d.timeout, metadata, d.credentials, d.wait_for_ready, getattr(d, "compression", None))

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_header(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._with_header(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._with_header(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._with_header(details), requests)


@dataclass
class Connection:
    url: str
    channel: grpc.Channel
    lease: lease_pb2_grpc.LeaseServiceStub
    store: store_pb2_grpc.FencedStoreServiceStub


class Servers:
    def __init__(self, urls: Sequence[str], credentials: Credentials | None = None, interceptors: Sequence[Any] = ()):
        if not urls:
            raise ValueError("at least one server URL is needed")
        for url in urls:
            if not _URL.match(url):
                raise ValueError(f"a server URL looks like http://127.0.0.1:50051, got {url!r}")
        self.urls = [u.rstrip("/") for u in urls]
        self._credentials = credentials or Credentials()
        self._interceptors = tuple(interceptors)
        cr = self._credentials
        if (cr.root_certificates or cr.certificate_chain or cr.private_key) and not all(u.startswith("https://") for u in self.urls):
            raise ValueError(f"TLS credentials need https:// servers, got {', '.join(self.urls)}")
        self._index = 0
        self._open: dict[tuple[Channel, str], Connection] = {}
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        return self.urls[self._index]

    def failed(self, url: str) -> None:
        """Moves on to the next server, if url is still the current one."""
        with self._lock:
            if self.urls[self._index] == url:
                self._index = (self._index + 1) % len(self.urls)

    def connection(self, channel: Channel, url: str | None = None) -> Connection:
        url = url or self.current
        with self._lock:
            c = self._open.get((channel, url))
            if c is None:
                c = self._connect(url)
                self._open[(channel, url)] = c
            return c

    def reset(self, channel: Channel, url: str) -> None:
        """Drops a connection: its calls fail, and the next call on that channel opens a fresh one."""
        with self._lock:
            c = self._open.pop((channel, url), None)
        if c:
            c.channel.close()

    def close(self) -> None:
        with self._lock:
            open_, self._open = list(self._open.values()), {}
        for c in open_:
            c.channel.close()

    def _connect(self, url: str) -> Connection:
        cr = self._credentials
        options = [
            # A pool of its own per channel: grpcio otherwise shares one connection among channels to the same
            # address, and the stream's connection could not be dropped without the calls'.
            ("grpc.use_local_subchannel_pool", 1),
            # grpcio's own reconnection backoff grows to 120 s, during which every call fails at once: a
            # server back after a restart would be shunned that long. Keep it to the stream's (100 ms to 2 s).
            # (Not grpc.min_reconnect_backoff_ms: grpcio also takes it as the connection timeout, 20 s.)
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 2000),
        ]
        target = url.split("://", 1)[1]
        if url.startswith("https://"):
            creds = grpc.ssl_channel_credentials(cr.root_certificates, cr.private_key, cr.certificate_chain)
            channel: grpc.Channel = grpc.secure_channel(target, creds, options)
        else:
            channel = grpc.insecure_channel(target, options)
        if cr.bearer is not None:
            channel = grpc.intercept_channel(channel, _Bearer(cr.bearer))
        if self._interceptors:
            channel = grpc.intercept_channel(channel, *self._interceptors)
        return Connection(url, channel, lease_pb2_grpc.LeaseServiceStub(channel), store_pb2_grpc.FencedStoreServiceStub(channel))


class Calls:
    def __init__(self, servers: Servers, timeout: float):
        self.servers = servers
        self.timeout = timeout
        """The deadline of a call that does not wait, in seconds."""

    def run(self, call: Callable[[Connection], T], repeatable: bool) -> T:
        tries = 0
        while True:
            tries += 1
            c = self.servers.connection("calls")
            try:
                return call(c)
            except grpc.RpcError as e:
                if not unreachable(e):
                    raise from_rpc_error(e) from None
                self.servers.failed(c.url)
                if not (repeatable or refused(e)) or tries >= len(self.servers.urls):
                    details = e.details() if isinstance(e, grpc.Call) else str(e)
                    raise UnavailableError(f"no answer from the server at {c.url}: {details}", grpc.StatusCode.UNAVAILABLE) from e
