"""The fencekeeper client for threads: acquires leases and keeps them alive on one KeepAlive stream, runs
work under a lease, and gives the store's calls with an explicit token. Any of several server URLs
(replicas of one service) may serve any call. Acquisitions go on sessions (one per TTL, opened on first
use and shared), as etcd's Mutex, Curator and Chubby lock; with sessions=False, each on an etcd lease of
its own. Thread-safe; fencekeeper.aio wraps it for asyncio."""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

import grpc
from google.protobuf import duration_pb2

from fencekeeper._deadline import default_drift, now
from fencekeeper._error_mapping import from_rpc_error
from fencekeeper._keepalive import Backoff, Emit, KeepAlive
from fencekeeper._keeper import KeeperContext, OwnLease, Session
from fencekeeper._servers import Calls, Connection, Credentials, Servers
from fencekeeper._write_batcher import WriteBatcher
from fencekeeper import election as _election
from fencekeeper.acquire_options import AcquireOptions, _merged, _ttl, _wait
from fencekeeper.election import Leader, LeaderObservation, Leadership
from fencekeeper.errors import CanceledError, FencekeeperError, InvalidArgumentError, LeaseNotFoundError, UnavailableError
from fencekeeper.lease import Lease, LeaseContext
from fencekeeper.store import FenceModeName, Store, Value, _bytes
from fencekeeper.token import Token
from fencekeeper.v1 import lease_pb2, token_pb2

DEFAULT_URL = "http://127.0.0.1:50051"
CLEANUPS_IN_FLIGHT = 16
"""Release and CloseSession calls in flight at most; more wait their turn. A lease's loss signal fires when it is released,
whatever its call waits for: this only keeps close() with many leases from sending them all at once."""
_ACQUIRE_ALL_FIELDS = frozenset({"ttl", "wait", "holder", "own_lease"})
"""The fields of AcquireOptions that an AcquireAll sends: the others ask what it cannot do."""


@dataclass(frozen=True)
class Holder:
    """One holder of a resource."""

    holder: str
    token: Token
    ttl: float | None
    """The TTL left on its lease, as etcd reports it (whole seconds)."""
    principal: str | None
    """Its authenticated principal, when the server has authentication on."""
    value: bytes = b""
    """The value it published (acquire's value, or its latest proclaim); empty without one."""

    @staticmethod
    def _from_proto(h: Any) -> Holder:
        return Holder(h.holder, Token.from_proto(h.token), _seconds(h.ttl) if h.HasField("ttl") else None, h.holder_principal or None, h.value)


@dataclass(frozen=True)
class Description:
    held: bool
    """Held exclusively, or by shared holders."""
    holder: str | None
    """The exclusive holder's label (with token and ttl); None when the holders are shared."""
    token: Token | None
    ttl: float | None
    """The TTL left on the holder's lease, as etcd reports it (whole seconds)."""
    waiters: int
    fence: int
    last_issued: int
    holders: tuple[Holder, ...] = ()
    """Every holder: the exclusive one, or the shared ones, oldest first."""
    lock_delay: float | None = None
    """The holder's lock-delay in seconds, or, while the resource is in a lock-delay, the one being served."""
    lock_delay_until: datetime | None = None
    """Set while the resource is in a lock-delay (its holder's lease expired): about when it ends."""
    value: bytes = b""
    """The exclusive holder's published value (acquire's value, or its latest proclaim); empty without one."""
    max_holders: int = 0
    """The shared holders' semaphore size (acquire's max_holders); 0 when they are not a semaphore's."""


@dataclass(frozen=True)
class Ownership:
    held: bool
    """Held exclusively, or by shared holders."""
    holder: str | None
    """The exclusive holder's label (with token, principal and value); None when the holders are shared."""
    token: Token | None
    revision: int
    """The etcd revision at which this state took effect."""
    principal: str | None = None
    value: bytes = b""
    """A proclaim of the same holder is a change of its own: the same token, a new value."""
    holders: tuple[Holder, ...] = ()
    """Every holder after this change (ttl None)."""
    joined: tuple[Holder, ...] = ()
    """The shared holders that joined since the previous change."""
    left: tuple[Holder, ...] = ()
    """The shared holders that left since the previous change."""
    max_holders: int = 0
    """The shared holders' semaphore size (AcquireRequest.max_holders); 0 when they are not a semaphore's."""
    lock_delay: float | None = None
    """The new holder's lock-delay in seconds, or, while lock_delay_until is set, the one being served."""
    lock_delay_until: datetime | None = None
    """Set when the resource has entered a lock-delay (its holder's lease expired): about when it ends."""


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
        token = Token.from_proto(x.token) if x.HasField("token") else None
        return Ownership(
            x.held,
            x.holder if x.held and x.holder else None,
            token,
            x.revision,
            principal=x.holder_principal or None,
            value=x.value,
            holders=tuple(Holder._from_proto(h) for h in x.holders),
            joined=tuple(Holder._from_proto(h) for h in x.joined),
            left=tuple(Holder._from_proto(h) for h in x.left),
            max_holders=x.max_holders,
            lock_delay=_seconds(x.lock_delay) if x.HasField("lock_delay") else None,
            lock_delay_until=x.lock_delay_until.ToDatetime(tzinfo=timezone.utc) if x.HasField("lock_delay_until") else None,
        )

    def close(self) -> None:
        self._call.cancel()

    def __enter__(self) -> Observation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """servers: replicas of one service, as a list or comma-separated (default: FENCEKEEPER_URL, else
    http://127.0.0.1:50051). Times are in seconds.

    coalesce_writes (default True): concurrent puts and deletes (from threads, or fencekeeper.aio tasks)
    are coalesced: a write that finds a call free goes out at once as a plain Put or Delete, and those made
    while two calls are in flight go together in the next FencedStoreService.Batch call. No timer, so a
    lone write waits for nothing; each write keeps its own answer and typed error, as if sent alone. A
    server without Batch gets one call per write. False: one call per write.

    interceptors: grpc client interceptors added to every channel the client opens (for metrics or logs)."""

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
        sessions: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        coalesce_writes: bool = True,
        interceptors: Sequence[Any] = (),
    ):
        urls = servers if servers is not None else (os.environ.get("FENCEKEEPER_URL") or DEFAULT_URL)
        listed = [u.strip() for u in urls.split(",") if u.strip()] if isinstance(urls, str) else list(urls)
        self._servers = Servers(listed, credentials, interceptors)
        self._calls = Calls(self._servers, call_timeout)
        self.store = Store(self._calls, WriteBatcher(self._calls) if coalesce_writes else None)
        """The fenced store with explicit tokens; writes through a Lease attach its token themselves."""
        self._holder = holder or f"{socket.gethostname()}:{os.getpid()}"
        emit = _guarded(on_event) if on_event else None
        self._keepalive = KeepAlive(self._servers, backoff, emit)
        self._cleanups = ThreadPoolExecutor(CLEANUPS_IN_FLIGHT, thread_name_prefix="fencekeeper-release")
        self._leases: set[Lease] = set()
        self._leases_lock = threading.Lock()
        self._closed = False
        self._emit = emit
        self._ctx = LeaseContext(store=self.store, fence_mode=fence_mode, ended=self._ended, emit=emit)
        self._keepers = KeeperContext(
            keepalive=self._keepalive,
            emit=emit,
            drift=(lambda ttl: drift_margin) if drift_margin is not None else default_drift,
            release=lambda token: self._in_background(self._release, token),
            close_session=lambda session_id: self._in_background(self._close_session, session_id),
        )
        self._sessions: dict[int, Session] | None = {} if sessions else None
        """The open session of each TTL in whole seconds, with sessions on."""
        self._sessions_lock = threading.Lock()

    @property
    def sessions(self) -> bool:
        """Whether this client puts its acquisitions on sessions."""
        return self._sessions is not None

    def acquire(self, resource: str, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Lease:
        """Acquires resource and keeps its lease alive until it is released or lost.

        What it asks (TTL, wait, holder, lock-delay, shared, value, semaphore size, preemption, a lease of its
        own) is options (a fencekeeper.AcquireOptions, which documents each field) with the keyword
        arguments, the same fields, applied over it: acquire(r, ttl=5, wait=True). Setting cancel cancels a
        waiting acquire (CanceledError) and, once granted, ends the lease.

        On the client's session of that TTL (the default; not on a client made with sessions=False), unless
        own_lease is set: a lease of its own is for a TTL whose fate is its own, or a holder that must lose this lock
        without losing the others, or learn at its next renewal that it was released behind its back
        (docs/client.md, "Sessions"). lock_delay and preempt always take a lease of their own."""
        o = _merged("acquire", options, fields)
        if self._sessions is not None and not o.lock_delay and not o.preempt and not o.own_lease:
            lease = self._acquire_on_session(resource, o, cancel)
            if lease is not None:
                return lease
        return self._acquire_own(resource, o, cancel)

    def _acquire_request(self, resource: str, o: AcquireOptions, wait_for: float | None, session: int = 0) -> lease_pb2.AcquireRequest:
        """The Acquire that o asks for, on a lease of its own or on the session with that lease id (whose TTL it takes)."""
        return lease_pb2.AcquireRequest(
            resource=resource,
            ttl=None if session else _duration(_ttl(o)),
            holder=o.holder or self._holder,
            wait=_wait(o) is not False,
            wait_timeout=_duration(wait_for) if wait_for is not None else None,
            lock_delay=_duration(o.lock_delay) if o.lock_delay else None,
            session_id=session,
            mode=token_pb2.ACQUIRE_MODE_SHARED if o.shared or o.max_holders else token_pb2.ACQUIRE_MODE_UNSPECIFIED,
            value=_bytes(o.value or b""),
            max_holders=o.max_holders or 0,
            preempt=bool(o.preempt),
        )

    def _acquire_own(self, resource: str, o: AcquireOptions, cancel: threading.Event | None) -> Lease:
        """An acquisition on an etcd lease of its own."""
        if self._closed:
            raise CanceledError("the client is closed", grpc.StatusCode.CANCELLED)
        wait = _wait(o)
        wait_for = float(wait) if not isinstance(wait, bool) else None
        req = self._acquire_request(resource, o, wait_for)
        sent_at = now()
        res = self._acquire_call(req, wait, wait_for, cancel)
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
        self._canceled(resource, token, cancel)
        keeper = OwnLease(token.lease_id, granted, sent_at, answered_at, self._keepers)
        keeper.lock_delay = bool(o.lock_delay) or res.HasField("lock_delay")
        lease = self._held(Lease(token, keeper, self._ctx, cancel))
        keeper.start()
        return lease

    def _acquire_on_session(self, resource: str, o: AcquireOptions, cancel: threading.Event | None) -> Lease | None:
        """An acquisition on the client's session of that TTL (opened if there is none, or if it was lost).
        None when the session already holds or waits for the resource (ALREADY_ACQUIRED): a session takes a
        resource once at a time, so that acquisition goes on a lease of its own, as without sessions."""
        started, wait = time.monotonic(), _wait(o)
        for attempt in (1, 2):
            session = self._session(_ttl(o))
            # A second attempt (the first one's session was lost) waits only for what is left of the wait.
            wait_for = max(0.0, float(wait) - (time.monotonic() - started)) if not isinstance(wait, bool) else None
            req = self._acquire_request(resource, o, wait_for, session.lease_id)
            try:
                res = self._acquire_call(req, wait, wait_for, cancel)
            except CanceledError:
                if cancel is not None and cancel.is_set():
                    sid = session.lease_id
                    self._in_background(lambda _: self._release_unanswered(resource, sid), None)
                raise
            except FencekeeperError as e:
                if e.reason == "ALREADY_ACQUIRED":
                    return None
                if isinstance(e, LeaseNotFoundError):
                    # The session is gone (it expired, or was closed, behind the client's back): lost, with its leases.
                    session.lose("not-found", e)
                    if attempt == 1:
                        continue
                raise
            if not res.HasField("token"):
                raise FencekeeperError("the server granted an acquisition without a token", grpc.StatusCode.INTERNAL)
            token = Token.from_proto(res.token)
            if session.look():
                # The session was lost while the Acquire was on its way; the acquisition went with it.
                if attempt == 1:
                    continue
                raise UnavailableError(f'acquire of "{resource}": its session was lost twice while acquiring; try again', grpc.StatusCode.UNAVAILABLE)
            self._canceled(resource, token, cancel)
            return self._held(Lease(token, session, self._ctx, cancel))
        raise AssertionError("unreachable")

    def acquire_all(self, resources: Sequence[str], options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> list[Lease]:
        """Acquires every resource or none (Curator's InterProcessMultiLock), in one AcquireAll call: the
        server takes them exclusively in the order of their names' bytes, so that two callers asking for
        overlapping sets cannot deadlock, and gives back what it took when one fails (the error is that
        resource's: ResourceHeldError, TimeoutError, ...). Returns one Lease per resource, in the order
        given, each released on its own; on the client's session unless own_lease (or sessions=False).

        Of AcquireOptions (options, and keyword fields over it, as for acquire()) it takes ttl, wait (for
        the whole set), holder and own_lease; another field set is an InvalidArgumentError. cancel as for
        acquire()."""
        o = _merged("acquire_all", options, fields)
        others = sorted(o.chosen() - _ACQUIRE_ALL_FIELDS)
        if others:
            raise InvalidArgumentError(
                f"acquire_all() takes {', '.join(sorted(_ACQUIRE_ALL_FIELDS))} of AcquireOptions, not {', '.join(others)}", grpc.StatusCode.INVALID_ARGUMENT
            )
        if self._closed:
            raise CanceledError("the client is closed", grpc.StatusCode.CANCELLED)
        if self._sessions is not None and not o.own_lease:
            leases = self._acquire_all_on_session(list(resources), _ttl(o), _wait(o), cancel, o.holder)
            if leases is not None:
                return leases
        return self._acquire_all_own(list(resources), _ttl(o), _wait(o), cancel, o.holder)

    def _acquire_all_call(self, req: Any, wait: bool | float, wait_for: float | None, cancel: threading.Event | None) -> Any:
        timeout = None if wait is True else self._calls.timeout + (wait_for or 0.0)
        res = self._calls.run(lambda c: _cancellable(c.lease.AcquireAll.future(req, timeout=timeout), cancel, ", ".join(req.resources)), False)
        if len(res.acquisitions) != len(req.resources) or not all(a.HasField("token") for a in res.acquisitions):
            raise FencekeeperError("the server answered AcquireAll without a token for every resource", grpc.StatusCode.INTERNAL)
        return res

    def _acquire_all_own(self, resources: list[str], ttl: float, wait: bool | float, cancel: threading.Event | None, holder: str | None) -> list[Lease]:
        """AcquireAll on leases of their own, one each."""
        wait_for = float(wait) if not isinstance(wait, bool) else None
        req = lease_pb2.AcquireAllRequest(
            resources=resources,
            ttl=_duration(ttl),
            holder=holder or self._holder,
            wait=wait is not False,
            wait_timeout=_duration(wait_for) if wait_for is not None else None,
        )
        sent_at = now()
        res = self._acquire_all_call(req, wait, wait_for, cancel)
        answered_at = now()
        grants = [(Token.from_proto(a.token), _seconds(a.ttl), sent_at, answered_at) for a in res.acquisitions]
        # As for one acquisition: after a long wait, each deadline counts from a renewal sent now.
        if any(answered_at.mono - sent_at.mono > g[1] / 3 for g in grants):
            confirmed = []
            for token, _, _, _ in grants:
                renew_sent = now()
                try:
                    renewed = self._calls.run(lambda c, t=token: c.lease.Renew(lease_pb2.RenewRequest(lease_id=t.lease_id), timeout=self._calls.timeout), True)
                except FencekeeperError:
                    for g in grants:
                        self._release(g[0])
                    raise
                confirmed.append((token, _seconds(renewed.ttl), renew_sent, now()))
            grants = confirmed
        if (cancel is not None and cancel.is_set()) or self._closed:
            for g in grants:
                self._release(g[0])
            raise CanceledError(f"acquire of {len(resources)} resources was canceled", grpc.StatusCode.CANCELLED)
        leases = []
        for token, granted, s_at, a_at in grants:
            keeper = OwnLease(token.lease_id, granted, s_at, a_at, self._keepers)
            leases.append(self._held(Lease(token, keeper, self._ctx, cancel)))
            keeper.start()
        return leases

    def _acquire_all_on_session(self, resources: list[str], ttl: float, wait: bool | float, cancel: threading.Event | None, holder: str | None) -> list[Lease] | None:
        """AcquireAll on the client's session of that TTL; None when the session holds one of them already."""
        started = time.monotonic()
        for attempt in (1, 2):
            session = self._session(ttl)
            wait_for = max(0.0, float(wait) - (time.monotonic() - started)) if not isinstance(wait, bool) else None
            req = lease_pb2.AcquireAllRequest(
                resources=resources,
                holder=holder or self._holder,
                wait=wait is not False,
                wait_timeout=_duration(wait_for) if wait_for is not None else None,
                session_id=session.lease_id,
            )
            try:
                res = self._acquire_all_call(req, wait, wait_for, cancel)
            except CanceledError:
                if cancel is not None and cancel.is_set():
                    sid = session.lease_id
                    for r in resources:
                        self._in_background(lambda _, r=r: self._release_unanswered(r, sid), None)
                raise
            except FencekeeperError as e:
                if e.reason == "ALREADY_ACQUIRED":
                    return None
                if isinstance(e, LeaseNotFoundError):
                    session.lose("not-found", e)
                    if attempt == 1:
                        continue
                raise
            tokens = [Token.from_proto(a.token) for a in res.acquisitions]
            if session.look():
                if attempt == 1:
                    continue
                raise UnavailableError(f"acquire of {len(resources)} resources: their session was lost twice while acquiring; try again", grpc.StatusCode.UNAVAILABLE)
            if (cancel is not None and cancel.is_set()) or self._closed:
                for t in tokens:
                    self._release(t)
                raise CanceledError(f"acquire of {len(resources)} resources was canceled", grpc.StatusCode.CANCELLED)
            return [self._held(Lease(t, session, self._ctx, cancel)) for t in tokens]
        raise AssertionError("unreachable")

    def _session(self, ttl: float) -> Session:
        """The open session of this TTL, shared; opened once however many acquisitions ask at the same time
        (they wait for the lock). etcd grants whole seconds, so TTLs that round up to the same second share one."""
        assert self._sessions is not None
        key = math.ceil(ttl)
        with self._sessions_lock:
            session = self._sessions.get(key)
            if session is not None and not session.look():
                return session
            if self._closed:
                raise CanceledError("the client is closed", grpc.StatusCode.CANCELLED)
            sent_at = now()
            req = lease_pb2.OpenSessionRequest(ttl=_duration(ttl), holder=self._holder)
            res = self._calls.run(lambda c: c.lease.OpenSession(req, timeout=self._calls.timeout), False)
            if not res.HasField("ttl"):
                raise FencekeeperError("the server opened a session without a TTL", grpc.StatusCode.INTERNAL)
            session = Session(res.session_id, _seconds(res.ttl), sent_at, now(), self._keepers)
            self._sessions[key] = session
            session.start()
            return session

    def _acquire_call(self, req: lease_pb2.AcquireRequest, wait: bool | float, wait_for: float | None, cancel: threading.Event | None) -> Any:
        timeout = None if wait is True else self._calls.timeout + (wait_for or 0.0)
        return self._calls.run(lambda c: _cancellable(c.lease.Acquire.future(req, timeout=timeout), cancel, req.resource), False)

    def _canceled(self, resource: str, token: Token, cancel: threading.Event | None) -> None:
        """Gives a fresh grant back if the acquire was canceled (or the client closed) meanwhile."""
        if (cancel is not None and cancel.is_set()) or self._closed:
            self._release(token)
            raise CanceledError(f'acquire of "{resource}" was canceled', grpc.StatusCode.CANCELLED)

    def _held(self, lease: Lease) -> Lease:
        with self._leases_lock:
            if not lease.lost.is_set():
                self._leases.add(lease)
        if self._emit:
            self._emit({"type": "acquired", "token": lease.token, "ttl": lease.ttl, "valid_until": lease.valid_until})
        return lease

    @contextmanager
    def lease(self, resource: str, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Iterator[Lease]:
        """`with client.lease(resource) as lease:` runs the block under a lease acquired as acquire() does,
        with the same options, and releases it afterwards, also when the block raises (its exception goes
        on). If the lease was lost before the block ended, leaving it raises the LeaseLostError."""
        lease = self.acquire(resource, _merged("lease", options, fields), cancel=cancel)
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
            tuple(Holder._from_proto(h) for h in d.holders),
            _seconds(d.lock_delay) if d.HasField("lock_delay") else None,
            d.lock_delay_until.ToDatetime(tzinfo=timezone.utc) if d.HasField("lock_delay_until") else None,
            d.value,
            d.max_holders,
        )

    def observe(self, resource: str) -> Observation:
        """The ownership of a resource now, then each change of holder: iterate it, close() it to stop."""
        call = self._servers.connection("calls").lease.Observe(lease_pb2.ObserveRequest(resource=resource))
        return Observation(call)

    def token_keys(self) -> dict[str, bytes]:
        """The server's public keys that verify tokens offline (key id -> raw Ed25519 key), the signing one first."""
        res = self._calls.run(lambda c: c.lease.ListTokenKeys(lease_pb2.ListTokenKeysRequest(), timeout=self._calls.timeout), True)
        return {k.key_id: k.public_key for k in res.keys}

    # Leader election and counting semaphores (fencekeeper.election).

    def campaign(self, resource: str, value: Value, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Leadership:
        """Waits in line for resource, exclusively, publishing value; returns once elected. See election.campaign."""
        return _election.campaign(self, resource, value, options, cancel=cancel, **fields)

    def leader(self, resource: str) -> Leader | None:
        """The current leader, or None when nobody holds the resource exclusively."""
        return _election.leader(self, resource)

    def observe_leaders(self, resource: str) -> LeaderObservation:
        """The leader now, then each change of leader or of its value, reconnecting; close() it to stop."""
        return _election.LeaderObservation(self, resource)

    def lead(self, resource: str, on_elected: Callable[..., Any], options: AcquireOptions | None = None, **kwargs: Any) -> None:
        """Campaigns until stop is set, in client-go's style. See election.lead."""
        _election.lead(self, resource, on_elected, options, **kwargs)

    def semaphore(self, resource: str, n: int, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Lease:
        """A permit of a counting semaphore of n (docs/semaphores.md). See election.semaphore."""
        return _election.semaphore(self, resource, n, options, cancel=cancel, **fields)

    def close(self) -> None:
        """Releases every lease still held and closes every session (each loss signal fires at once), then
        closes the connections."""
        self._closed = True
        with self._sessions_lock:
            sessions = list((self._sessions or {}).values())
        # A session's leases end with it, in one CloseSession; what is left has leases of its own.
        closing = [s.close() for s in sessions]
        with self._leases_lock:
            leases = list(self._leases)
        for lease in leases:
            lease._end("released")
        for lease in leases:
            lease.release()
        for f in closing:
            f.result()
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

    def _release_unanswered(self, resource: str, session_id: int) -> None:
        """An Acquire on a session, cancelled before its answer came: the server may have granted it, with the
        answer on its way. A session holds a resource once at a time, so a holding of resource on that session
        that this client never handed out is that grant: given back, or it would stand as long as the session.
        Best effort, never raises: if no server answers, it ends with the session."""
        try:
            d = self.describe(resource)
        except FencekeeperError:
            return
        with self._leases_lock:
            ours = {(x.token.lease_id, x.token.generation) for x in self._leases}
        tokens = [h.token for h in d.holders] + ([d.token] if d.token is not None else [])
        for token in {(t.lease_id, t.generation): t for t in tokens}.values():
            if token.lease_id == session_id and (token.lease_id, token.generation) not in ours:
                self._release(token)

    def _close_session(self, session_id: int) -> None:
        """Closes a session on the server; never raises (gone already, or no server answers: it ends at its TTL)."""
        try:
            req = lease_pb2.CloseSessionRequest(session_id=session_id)
            self._calls.run(lambda c: c.lease.CloseSession(req, timeout=self._calls.timeout), True)
        except FencekeeperError:
            pass

    def _in_background(self, cleanup: Callable[[Any], None], arg: Any) -> Future[None]:
        try:
            return self._cleanups.submit(cleanup, arg)
        except RuntimeError:  # shut down: the client is closed, what is left ends at its TTL
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

