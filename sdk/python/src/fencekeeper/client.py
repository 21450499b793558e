"""The fencekeeper client for threads: acquires leases and keeps them alive on one KeepAlive stream, runs
work under a lease, and gives the store's calls with an explicit token. Any of several server URLs
(replicas of one service) may serve any call. Thread-safe; fencekeeper.aio wraps it for asyncio."""

from __future__ import annotations

import os
import socket
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import grpc
from google.protobuf import duration_pb2

from fencekeeper._deadline import default_drift, now
from fencekeeper._error_mapping import from_rpc_error
from fencekeeper._keepalive import Backoff, Emit, KeepAlive
from fencekeeper._servers import Calls, Connection, Credentials, Servers
from fencekeeper.errors import CanceledError, FencekeeperError
from fencekeeper.lease import Lease, LeaseContext
from fencekeeper.store import FenceModeName, Store
from fencekeeper.token import Token
from fencekeeper.v1 import lease_pb2

DEFAULT_URL = "http://127.0.0.1:50051"
DEFAULT_TTL = 10.0
CLEANUPS_IN_FLIGHT = 16
"""Release calls in flight at most; more wait their turn. A lease's loss signal fires when it is released,
whatever its call waits for: this only keeps close() with many leases from sending them all at once."""


@dataclass(frozen=True)
class Description:
    held: bool
    holder: str | None
    token: Token | None
    ttl: float | None
    """The TTL left on the holder's lease, as etcd reports it (whole seconds)."""
    waiters: int
    fence: int
    last_issued: int


@dataclass(frozen=True)
class Ownership:
    held: bool
    holder: str | None
    token: Token | None
    revision: int
    """The etcd revision at which this state took effect."""


def _duration(seconds: float) -> duration_pb2.Duration:
    whole = int(seconds)
    return duration_pb2.Duration(seconds=whole, nanos=int(round((seconds - whole) * 1e9)))


def _seconds(d: duration_pb2.Duration) -> float:
    return d.seconds + d.nanos / 1e9


class Observation(Iterator[Ownership]):
    """The ownership of a resource now, then each change of holder, until close()."""

    def __init__(self, call: Any):
        self._call = call

    def __iter__(self) -> Observation:
        return self

    def __next__(self) -> Ownership:
        try:
            x = next(self._call)
        except grpc.RpcError as e:
            if isinstance(e, grpc.Call) and e.code() == grpc.StatusCode.CANCELLED:
                raise StopIteration from None
            raise from_rpc_error(e) from None
        token = Token.from_proto(x.token) if x.held else None
        return Ownership(x.held, x.holder if x.held else None, token, x.revision)

    def close(self) -> None:
        self._call.cancel()

    def __enter__(self) -> Observation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """servers: replicas of one service, as a list or comma-separated (default: FENCEKEEPER_URL, else
    http://127.0.0.1:50051). Times are in seconds."""

    def __init__(
        self,
        servers: str | Sequence[str] | None = None,
        *,
        holder: str | None = None,
        drift_margin: float | None = None,
        call_timeout: float = 15.0,
        fence_mode: FenceModeName = "live",
        backoff: Backoff = Backoff(),
        credentials: Credentials | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ):
        urls = servers if servers is not None else (os.environ.get("FENCEKEEPER_URL") or DEFAULT_URL)
        listed = [u.strip() for u in urls.split(",") if u.strip()] if isinstance(urls, str) else list(urls)
        self._servers = Servers(listed, credentials)
        self._calls = Calls(self._servers, call_timeout)
        self.store = Store(self._calls)
        """The fenced store with explicit tokens; writes through a Lease attach its token themselves."""
        self._holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        emit = _guarded(on_event) if on_event else None
        self._keepalive = KeepAlive(self._servers, backoff, emit)
        self._cleanups = ThreadPoolExecutor(CLEANUPS_IN_FLIGHT, thread_name_prefix="fencekeeper-release")
        self._leases: set[Lease] = set()
        self._leases_lock = threading.Lock()
        self._closed = False
        self._emit = emit
        self._ctx = LeaseContext(
            keepalive=self._keepalive,
            store=self.store,
            fence_mode=fence_mode,
            drift=(lambda ttl: drift_margin) if drift_margin is not None else default_drift,
            release=self._release_in_background,
            ended=self._ended,
            emit=emit,
        )

    def acquire(
        self,
        resource: str,
        *,
        ttl: float = DEFAULT_TTL,
        wait: bool | float = False,
        cancel: threading.Event | None = None,
        holder: str | None = None,
    ) -> Lease:
        """Acquires resource and keeps its lease alive until it is released or lost.

        ttl: seconds (etcd grants whole seconds, at least 2). wait: False fails with ResourceHeldError when
        the resource is held; True waits in line; a number waits at most that many seconds (TimeoutError).
        Setting cancel cancels a waiting acquire (CanceledError) and, once granted, ends the lease."""
        if self._closed:
            raise CanceledError("the client is closed", grpc.StatusCode.CANCELLED)
        waits = wait is not False
        wait_for = float(wait) if not isinstance(wait, bool) else None
        timeout = None if wait is True else self._calls.timeout + (wait_for or 0.0)
        req = lease_pb2.AcquireRequest(
            resource=resource,
            ttl=_duration(ttl),
            holder=holder or self._holder,
            wait=waits,
            wait_timeout=_duration(wait_for) if wait_for is not None else None,
        )
        sent_at = now()
        res = self._calls.run(lambda c: _cancellable(c.lease.Acquire.future(req, timeout=timeout), cancel, resource), False)
        if not res.HasField("token") or not res.HasField("ttl"):
            raise FencekeeperError("the server granted a lease without a token or a TTL", grpc.StatusCode.INTERNAL)
        token, granted, answered_at = Token.from_proto(res.token), _seconds(res.ttl), now()
        # The deadline counts from the Acquire's send, and a wait in line uses it up: the TTL started when the
        # lease was granted, at some unknown point before the answer. Then count from a renewal instead.
        if answered_at.mono - sent_at.mono > granted / 3:
            sent_at = now()
            try:
                renewed = self._calls.run(lambda c: c.lease.Renew(lease_pb2.RenewRequest(lease_id=token.lease_id), timeout=self._calls.timeout), True)
            except FencekeeperError:
                self._release(token)
                raise
            granted, answered_at = _seconds(renewed.ttl), now()
        if (cancel is not None and cancel.is_set()) or self._closed:
            self._release(token)
            raise CanceledError(f'acquire of "{resource}" was canceled', grpc.StatusCode.CANCELLED)
        lease = Lease(token, granted, sent_at, answered_at, self._ctx, cancel)
        with self._leases_lock:
            self._leases.add(lease)
        if self._emit:
            self._emit({"type": "acquired", "token": token, "ttl": granted, "valid_until": lease.valid_until})
        self._keepalive.add(lease, sent_at.mono + lease.interval)
        return lease

    @contextmanager
    def lease(
        self,
        resource: str,
        *,
        ttl: float = DEFAULT_TTL,
        wait: bool | float = False,
        cancel: threading.Event | None = None,
        holder: str | None = None,
    ) -> Iterator[Lease]:
        """`with client.lease(resource) as lease:` runs the block under a lease and releases it afterwards,
        also when the block raises (its exception goes on). If the lease was lost before the block ended,
        leaving it raises the LeaseLostError."""
        lease = self.acquire(resource, ttl=ttl, wait=wait, cancel=cancel, holder=holder)
        try:
            yield lease
            error = lease.error
            if error is not None and error.why != "released":
                raise error
        finally:
            lease.release()

    def describe(self, resource: str) -> Description:
        """Who holds a resource, with which token, for how much longer, and how many wait."""
        req = lease_pb2.DescribeRequest(resource=resource)
        d = self._calls.run(lambda c: c.lease.Describe(req, timeout=self._calls.timeout), True)
        return Description(
            d.held,
            d.holder if d.held else None,
            Token.from_proto(d.token) if d.HasField("token") else None,
            _seconds(d.ttl) if d.HasField("ttl") else None,
            d.waiters,
            d.fence,
            d.last_issued,
        )

    def observe(self, resource: str) -> Observation:
        """The ownership of a resource now, then each change of holder: iterate it, close() it to stop."""
        call = self._servers.connection("calls").lease.Observe(lease_pb2.ObserveRequest(resource=resource))
        return Observation(call)

    def token_keys(self) -> dict[str, bytes]:
        """The server's public keys that verify tokens offline (key id -> raw Ed25519 key), the signing one first."""
        res = self._calls.run(lambda c: c.lease.ListTokenKeys(lease_pb2.ListTokenKeysRequest(), timeout=self._calls.timeout), True)
        return {k.key_id: k.public_key for k in res.keys}

    def close(self) -> None:
        """Releases every lease still held (each loss signal fires at once), then closes the connections."""
        self._closed = True
        with self._leases_lock:
            leases = list(self._leases)
        for lease in leases:
            lease._end("released")
        for lease in leases:
            lease.release()
        self._keepalive.close()
        self._cleanups.shutdown(wait=True)
        self._servers.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> Connection:
        """The current server's stubs, for a call the library does not wrap; map its failures with
        fencekeeper.error_of()."""
        return self._servers.connection("calls")

    def _ended(self, lease: Lease) -> None:
        with self._leases_lock:
            self._leases.discard(lease)

    def _release(self, token: Token) -> None:
        """Gives an acquisition up on the server. Never raises: gone already, or no server answers, the lease
        ends at its TTL with renewals stopped."""
        try:
            self._calls.run(lambda c: c.lease.Release(lease_pb2.ReleaseRequest(token=token.to_proto()), timeout=self._calls.timeout), True)
        except FencekeeperError:
            pass

    def _release_in_background(self, token: Token) -> Future[None]:
        try:
            return self._cleanups.submit(self._release, token)
        except RuntimeError:  # shut down: the client is closed, the lease ends at its TTL
            done: Future[None] = Future()
            done.set_result(None)
            return done


def _cancellable(call: grpc.Future, cancel: threading.Event | None, resource: str) -> Any:
    """Waits for a call, cancelling it once `cancel` is set."""
    if cancel is not None:
        done = threading.Event()
        call.add_done_callback(lambda _: done.set())
        while not done.wait(0.05):
            if cancel.is_set() and call.cancel():
                raise CanceledError(f'acquire of "{resource}" was canceled', grpc.StatusCode.CANCELLED)
    return call.result()


def _guarded(sink: Callable[[dict[str, Any]], None]) -> Emit:
    """A listener that raises must not stop the keeping of leases: its error is printed and dropped."""

    def emit(event: dict[str, Any]) -> None:
        try:
            sink(event)
        except Exception:  # noqa: BLE001
            import traceback

            traceback.print_exc()

    return emit
