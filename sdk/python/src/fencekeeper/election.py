"""Leader election and counting semaphores on top of leases (docs/election.md, docs/semaphores.md).

A campaign is an exclusive acquire that waits in line and publishes a value; the leader is the exclusive
holder; followers observe it. lead() is the loop of client-go's leaderelection: campaign, run the elected
code with the lease's loss signal, campaign again after a loss. The signal is the lease's, so it is set at
valid_until (the send time of the last confirmed renewal + TTL - drift margin), before etcd can expire the
lease and grant anyone else.

    with fencekeeper.Client() as client:
        leadership = client.campaign("scheduler", "10.0.0.7:8080", ttl=10)
        while not leadership.signal.is_set(): ...   # looks at the clock
        leadership.resign()

Callers of fencekeeper.Client use its methods (campaign, leader, observe_leaders, lead, semaphore); those of
fencekeeper.aio the awaitable ones there."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import grpc

from fencekeeper._keepalive import Backoff
from fencekeeper.acquire_options import AcquireOptions, _merged
from fencekeeper.errors import (
    CanceledError,
    FencekeeperError,
    InvalidArgumentError,
    LeaseLostError,
    LeaseNotFoundError,
    LockDelayError,
    PermissionDeniedError,
    TimeoutError,
    UnauthenticatedError,
    UnavailableError,
)
from fencekeeper.lease import Lease
from fencekeeper.store import Value
from fencekeeper.token import Token


class OwnershipStream(Protocol):
    """A stream of a resource's ownership, as Client.observe gives it (fencekeeper.client.Observation is one)."""

    def __next__(self) -> Any: ...

    def close(self) -> None: ...


class ElectionClient(Protocol):
    """What an election and a semaphore need of the client (fencekeeper.Client is one): this module builds
    on the client, and the client's campaign, lead and semaphore call it, one way, as etcd's concurrency
    package builds on a session."""

    def acquire(self, resource: str, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None) -> Lease: ...

    def describe(self, resource: str) -> Any: ...

    def observe(self, resource: str) -> OwnershipStream: ...

    def observe_leaders(self, resource: str) -> LeaderObservation: ...

_BACKOFF = Backoff()


@dataclass(frozen=True)
class Leader:
    """The leader of a resource as followers see it."""

    holder: str
    token: Token
    """Orders leaders (its generation); the fenced store refuses a deposed leader's writes."""
    value: bytes
    """What it published (campaign, proclaim); empty without one."""


@dataclass(frozen=True)
class LeaderChange:
    """One change observe_leaders() gives: a new leader, a new value of the same one, or nobody (None)."""

    leader: Leader | None
    """None while nobody leads (the resource is free, in a lock-delay, or held by shared holders)."""
    revision: int
    """The etcd revision at which it took effect (after a reconnection, the one the stream started at)."""


class LossSignal(threading.Event):
    """A lease's loss as a threading.Event whose is_set() and wait() look at the clock first: code that
    checks it after a pause of the process sees the loss on its first look, before any timer has run."""

    def __init__(self, lease: Lease):
        super().__init__()
        self._lease = lease

    def is_set(self) -> bool:
        return self._lease.lost.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._lease.lost.wait(timeout) or self._lease.lost.is_set()

    @property
    def error(self) -> LeaseLostError | None:
        """Why the leadership ended, once it has."""
        return self._lease.error


class Leadership:
    """An elected campaign: the leader's lease (its writes go under the leader's token)."""

    def __init__(self, lease: Lease):
        self.lease = lease
        self.signal = LossSignal(lease)
        """Set once this process can no longer assume it leads: stop acting then."""

    @property
    def token(self) -> Token:
        return self.lease.token

    @property
    def leading(self) -> bool:
        """Whether it may still assume it leads, by the clock right now."""
        return self.lease.held

    def proclaim(self, value: Value) -> int:
        """Publishes a new value without giving up leadership; refused (and the leadership lost) once deposed.
        Returns the etcd revision at which it took effect."""
        return self.lease.proclaim(value)

    def resign(self) -> None:
        """Gives leadership up now, so that the next campaigner is elected at once. Idempotent; never raises."""
        self.lease.release()

    def __repr__(self) -> str:
        return f"Leadership({self.lease!r})"


def campaign(client: ElectionClient, resource: str, value: Value, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Leadership:
    """Waits in line for resource, exclusively, publishing value; returns once elected. Takes AcquireOptions
    (and keyword fields over them) as acquire() does, with two defaults of its own: wait True (as long as it
    takes; a number of seconds at most that long, TimeoutError; an explicit False fails at once with
    ResourceHeldError), and own_lease True, also on a client with sessions: a leadership must be lost alone,
    and its leader told at its next renewal when it is released behind its back, which a session's renewal
    would not tell. Options that ask for shared, max_holders or a value are refused (InvalidArgumentError): a
    campaign is exclusive, and publishes its value argument. Setting cancel ends the wait (CanceledError) and, once elected, the leadership."""
    return Leadership(client.acquire(resource, _campaign_options(value, _merged("campaign", options, fields)), cancel=cancel))


def _campaign_options(value: Value, o: AcquireOptions) -> AcquireOptions:
    """A campaign's acquisition (campaign() and campaign_async())."""
    if o.shared or o.max_holders or o.value is not None:
        raise InvalidArgumentError(
            "a campaign is exclusive and publishes its value argument: AcquireOptions' shared, max_holders and value must be unset",
            grpc.StatusCode.INVALID_ARGUMENT,
        )
    return dataclasses.replace(o.with_defaults(wait=True, own_lease=True), value=value)


def leader(client: ElectionClient, resource: str) -> Leader | None:
    """The current leader, or None when nobody holds the resource exclusively."""
    d = client.describe(resource)
    return Leader(d.holder or "", d.token, d.value) if d.token is not None else None


def semaphore(client: ElectionClient, resource: str, n: int, options: AcquireOptions | None = None, *, cancel: threading.Event | None = None, **fields: Any) -> Lease:
    """A permit of a counting semaphore of n on resource (docs/semaphores.md): waits in line, first come first
    served, until fewer than n hold it, and keeps the permit's lease alive until released or lost. Its token
    is a shared token: the fenced store refuses its writes. Another n while anyone holds or waits is a
    FencekeeperError with reason MAX_HOLDERS_MISMATCH (FAILED_PRECONDITION). Takes AcquireOptions (and
    keyword fields over them) as acquire() does, and cancel, except that wait defaults to True (as long as
    it takes; a number of seconds at most that long; an explicit False fails at once with
    ResourceHeldError); max_holders is n."""
    return client.acquire(resource, _semaphore_options(n, _merged("semaphore", options, fields)), cancel=cancel)


def _semaphore_options(n: int, o: AcquireOptions) -> AcquireOptions:
    """A semaphore's acquisition (semaphore() and fencekeeper.aio's)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidArgumentError(f"a semaphore needs at least 1 permit, got {n!r}", grpc.StatusCode.INVALID_ARGUMENT)
    if o.max_holders is not None and o.max_holders != n:
        raise InvalidArgumentError(f"a semaphore of {n} asked with max_holders {o.max_holders}", grpc.StatusCode.INVALID_ARGUMENT)
    return dataclasses.replace(o.with_defaults(wait=True), max_holders=n)


class LeaderObservation(Iterator[LeaderChange]):
    """The leader now, then each change of leader or of its value, in order, until close(). A stream the
    server or the network ends is opened again with backoff, and starts with the current leader, given only
    if it differs from the last one given. A refusal reconnecting cannot mend (bad arguments, permission) is
    raised."""

    def __init__(self, client: ElectionClient, resource: str):
        self._client = client
        self._resource = resource
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._stream: OwnershipStream | None = None
        self._last: Leader | None = None
        self._given = False
        self._failures = 0
        self._opened = False

    def __iter__(self) -> LeaderObservation:
        return self

    def __next__(self) -> LeaderChange:
        while not self._closed.is_set():
            stream = self._open()
            if stream is None:
                break
            try:
                o = next(stream)
            except StopIteration:
                self._drop(stream)  # ended by the server, or closed
                continue
            except (InvalidArgumentError, PermissionDeniedError, UnauthenticatedError):
                raise
            except FencekeeperError:
                self._failures += 1
                self._drop(stream)
                continue
            self._failures = 0
            now = Leader(o.holder or "", o.token, o.value) if o.token is not None else None
            if self._given and now == self._last:
                continue
            self._last, self._given = now, True
            return LeaderChange(now, o.revision)
        raise StopIteration

    def _open(self) -> OwnershipStream | None:
        with self._lock:
            if self._stream is not None:
                return self._stream
        # Reconnecting: wait out the backoff (at once after a stream that ended cleanly).
        if self._opened and self._closed.wait(_BACKOFF.delay(max(self._failures, 1))):
            return None
        self._opened = True
        stream = self._client.observe(self._resource)
        with self._lock:
            if self._closed.is_set():
                stream.close()
                return None
            self._stream = stream
        return stream

    def _drop(self, stream: OwnershipStream) -> None:
        with self._lock:
            if self._stream is stream:
                self._stream = None
        stream.close()

    def close(self) -> None:
        """Ends the iteration (from any thread)."""
        with self._lock:
            self._closed.set()
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def __enter__(self) -> LeaderObservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_terms: dict[str, threading.Event] = {}
"""The on_elected calls running in this process, by resource: the next one waits for the last to return."""
_terms_lock = threading.Lock()


def lead(
    client: ElectionClient,
    resource: str,
    on_elected: Callable[[LossSignal, Token, Leadership], Any],
    options: AcquireOptions | None = None,
    *,
    on_deposed: Callable[[LeaseLostError | None], Any] | None = None,
    on_new_leader: Callable[[Leader | None], Any] | None = None,
    value: Value | Callable[[], Value] | None = None,
    stop: threading.Event | None = None,
    **fields: Any,
) -> None:
    """Campaigns for resource until stop is set, in the style of client-go's leaderelection:

    - once elected, runs on_elected(signal, token, leadership) on this thread. Leadership lasts until the
      signal is set, whether or not on_elected returns earlier; if it raises, leadership is resigned;
    - after a loss (expiry, a refused renewal, write or proclaim, a resign), once on_elected returned, calls
      on_deposed(error) (once per on_elected) and campaigns again;
    - never runs two on_elected at once in one process for one resource (two lead() of one process take turns);
    - on_new_leader(leader or None) on each change of leader (not of value), this process included, from a
      thread of its own;
    - setting stop resigns a leadership, waits for on_elected, calls on_deposed, and returns.

    Each campaign is campaign()'s, with options (and keyword fields over them) and value: given, or made
    afresh for each campaign by calling it; None: the options' value.

    Raises only for a refusal campaigning again cannot mend (bad arguments, permission denied); UNAVAILABLE,
    deadlines, a lease lost while waiting and a lock-delay are retried with backoff."""
    o = _merged("lead", options, fields)
    stop = stop if stop is not None else threading.Event()
    over = threading.Event()
    current: list[Leadership] = []
    observation = client.observe_leaders(resource) if on_new_leader is not None else None

    def follow() -> None:
        assert observation is not None and on_new_leader is not None
        last: object = object()
        try:
            for change in observation:
                generation = change.leader.token.generation if change.leader else None
                if generation != last:
                    last = generation
                    on_new_leader(change.leader)
        except Exception:  # noqa: BLE001 (following is best effort: leading goes on without it)
            pass

    def watch_stop() -> None:
        # stop ends the leadership (the campaign's cancel ends a wait in line).
        while not stop.wait(0.05):
            if over.is_set():
                return
        for leadership in list(current):
            leadership.resign()
        if observation is not None:
            observation.close()

    threads = [threading.Thread(target=watch_stop, name="fencekeeper-lead-stop", daemon=True)]
    if observation is not None:
        threads.append(threading.Thread(target=follow, name="fencekeeper-lead-follow", daemon=True))
    for t in threads:
        t.start()
    try:
        failures = 0
        while not stop.is_set():
            try:
                leadership = campaign(client, resource, _value(value, o), dataclasses.replace(o, value=None), cancel=stop)
                failures = 0
            except CanceledError:
                return
            except (UnavailableError, TimeoutError, LeaseNotFoundError, LockDelayError):
                failures += 1
                stop.wait(_BACKOFF.delay(failures))
                continue
            current[:] = [leadership]
            if stop.is_set():
                leadership.resign()
            _serve(resource, leadership, on_elected, on_deposed)
            current.clear()
    finally:
        over.set()
        if observation is not None:
            observation.close()
        for t in threads:
            t.join()


def _serve(resource: str, leadership: Leadership, on_elected: Callable[..., Any], on_deposed: Callable[..., Any] | None) -> None:
    """One term: on_elected (after any earlier term of the resource in this process), then on_deposed once over."""
    mine = threading.Event()
    with _terms_lock:
        before = _terms.get(resource)
        _terms[resource] = mine
    try:
        if before is not None:
            before.wait()
        # Lost while the earlier term finished: on_elected would start on a set signal; skip it, and
        # on_deposed with it: that leadership was never this process's to act on.
        served = leadership.leading
        if served:
            try:
                on_elected(leadership.signal, leadership.token, leadership)
            except Exception:  # noqa: BLE001 (a leader whose work failed should not keep the others out)
                leadership.resign()
        leadership.signal.wait()
        leadership.resign()  # waits for the release the loss started, so that nothing is left held
    finally:
        with _terms_lock:
            if _terms.get(resource) is mine:
                del _terms[resource]
        mine.set()
    if served and on_deposed is not None:
        on_deposed(leadership.signal.error)


# asyncio (fencekeeper.aio.Client's campaign, leader, observe_leaders, lead and semaphore).


class AsyncLeadership:
    """An elected campaign of fencekeeper.aio: the leader's aio Lease."""

    def __init__(self, lease: Any):
        self.lease = lease

    @property
    def token(self) -> Token:
        return self.lease.token

    @property
    def lost(self) -> Any:
        """An asyncio.Event, set once this process can no longer assume it leads (by the loop, when it runs:
        look at `leading` right before acting, which looks at the clock)."""
        return self.lease.lost

    @property
    def leading(self) -> bool:
        return bool(self.lease.held)

    async def proclaim(self, value: Value) -> int:
        return int(await self.lease.proclaim(value))

    async def resign(self) -> None:
        await self.lease.release()

    def __repr__(self) -> str:
        return f"AsyncLeadership({self.lease!r})"


async def campaign_async(client: Any, resource: str, value: Value, options: AcquireOptions | None = None, **fields: Any) -> AsyncLeadership:
    """As campaign(), for fencekeeper.aio: cancelling the awaiting task ends the wait."""
    return AsyncLeadership(await client.acquire(resource, _campaign_options(value, _merged("campaign", options, fields))))


async def observe_leaders_async(client: Any, resource: str) -> Any:
    observation = client._core.observe_leaders(resource)
    end = object()
    try:
        while (x := await client._run(next, observation, end)) is not end:
            yield x
    finally:
        observation.close()


async def lead_async(
    client: Any,
    resource: str,
    on_elected: Callable[..., Any],
    options: AcquireOptions | None = None,
    *,
    on_deposed: Callable[[LeaseLostError | None], Any] | None = None,
    on_new_leader: Callable[[Leader | None], Any] | None = None,
    value: Value | Callable[[], Value] | None = None,
    **fields: Any,
) -> None:
    """As lead(), for asyncio: on_elected(lost, token, leadership) is awaited if it is a coroutine function;
    cancelling the task that awaits lead_async() stops it (a leadership is resigned, on_elected awaited,
    on_deposed called), and the CancelledError goes on."""
    import asyncio

    o = _merged("lead", options, fields)

    async def follow() -> None:
        assert on_new_leader is not None
        last: object = object()
        try:
            async for change in observe_leaders_async(client, resource):
                generation = change.leader.token.generation if change.leader else None
                if generation != last:
                    last = generation
                    on_new_leader(change.leader)
        except FencekeeperError:
            pass  # following is best effort: leading goes on without it

    following = asyncio.create_task(follow()) if on_new_leader is not None else None
    try:
        failures = 0
        while True:
            try:
                leadership = await campaign_async(client, resource, _value(value, o), dataclasses.replace(o, value=None))
                failures = 0
            except (UnavailableError, TimeoutError, LeaseNotFoundError, LockDelayError):
                failures += 1
                await asyncio.sleep(_BACKOFF.delay(failures))
                continue
            await _serve_async(client, resource, leadership, on_elected, on_deposed)
    finally:
        if following is not None:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)


def _value(value: Value | Callable[[], Value] | None, o: AcquireOptions) -> Value:
    """The value of lead()'s next campaign."""
    if callable(value):
        return value()
    if value is not None:
        return value
    return o.value if o.value is not None else b""


async def _serve_async(client: Any, resource: str, leadership: AsyncLeadership, on_elected: Callable[..., Any], on_deposed: Callable[..., Any] | None) -> None:
    """One term, as _serve(); the terms of one resource take turns with those of threads too."""
    import asyncio

    mine = threading.Event()
    with _terms_lock:
        before = _terms.get(resource)
        _terms[resource] = mine
    served = False
    canceled = False
    try:
        if before is not None:
            try:
                await client._run(before.wait)
            except asyncio.CancelledError:
                canceled = True
                await leadership.resign()
                await client._run(before.wait)
        served = not canceled and leadership.leading
        if served:
            work = asyncio.ensure_future(_call(on_elected, leadership.lost, leadership.token, leadership))
            try:
                try:
                    await asyncio.shield(work)
                except Exception:  # noqa: BLE001 (a leader whose work failed should not keep the others out)
                    await leadership.resign()
                # Leadership lasts until the loss, whether or not on_elected returned earlier.
                await leadership.lost.wait()
            except asyncio.CancelledError:
                canceled = True
                await leadership.resign()
                await asyncio.gather(work, return_exceptions=True)
        await leadership.resign()
    finally:
        with _terms_lock:
            if _terms.get(resource) is mine:
                del _terms[resource]
        mine.set()
    if served and on_deposed is not None:
        on_deposed(leadership.lease.error)
    if canceled:
        raise asyncio.CancelledError()


async def _call(fn: Callable[..., Any], *args: Any) -> None:
    import inspect

    result = fn(*args)
    if inspect.isawaitable(result):
        await result
