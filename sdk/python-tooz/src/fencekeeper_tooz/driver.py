"""The tooz coordination driver on fencekeeper.

Every tooz primitive that fencekeeper backs is an acquisition of one fencekeeper resource, named
`<prefix><kind>/<name>` (prefix default "tooz/"):

- a lock `name`: an exclusive acquisition of `<prefix>locks/<name>` (shared with acquire(shared=True));
- the leadership of group `g`: an exclusive acquisition of `<prefix>leaders/<g>` whose value is the member id;
- the membership of group `g`: a shared acquisition of `<prefix>groups/<g>` whose value is the capabilities.

Each is a fencekeeper lease with its own fencing token (`lock.token`, `LeaderElected.token`), kept alive by
the client library's KeepAlive thread and lost the way the library loses it (docs/client-semantics.md).
"""

from __future__ import annotations

import collections
import contextlib
import threading
from concurrent import futures
from typing import Any, Callable, Iterator

import fencekeeper
import tooz
from tooz import coordination, locking, utils

DEFAULT_TTL = 10.0
DEFAULT_PREFIX = "tooz/"


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    """The library's errors as tooz's: tooz callers catch tooz.ToozError (and its connection and timeout kinds)."""
    try:
        yield
    except fencekeeper.UnavailableError as e:
        utils.raise_with_cause(coordination.ToozConnectionError, str(e), cause=e)
    except fencekeeper.TimeoutError as e:
        utils.raise_with_cause(coordination.OperationTimedOut, str(e), cause=e)
    except fencekeeper.FencekeeperError as e:
        utils.raise_with_cause(tooz.ToozError, str(e), cause=e)


def _result(call: Callable[[], Any]) -> coordination.CoordinatorResult:
    """Runs call now and gives its outcome as tooz's asynchronous result (the calls are short gRPC calls)."""
    fut: futures.Future[Any] = futures.Future()
    try:
        with _translated():
            fut.set_result(call())
    except BaseException as e:  # noqa: BLE001 (handed to the caller by get())
        fut.set_exception(e)
    return coordination.CoordinatorResult(fut)


def _text(name: Any) -> str:
    return name.decode("utf-8") if isinstance(name, (bytes, bytearray)) else str(name)


class LeaderElected(coordination.LeaderElected):
    """tooz's LeaderElected, with the leadership it is about: `token` is the leader's fencing token, `signal`
    its loss signal (a threading.Event that looks at the clock), `leadership` the library's Leadership."""

    def __init__(self, group_id: Any, member_id: Any, leadership: fencekeeper.Leadership):
        super().__init__(group_id, member_id)
        self.leadership = leadership
        self.token: fencekeeper.Token = leadership.token
        self.signal = leadership.signal


class LeadershipLost(coordination.Event):
    """This member no longer leads group_id: `error` is the library's LeaseLostError (`why`: "deadline",
    "not-found", "fenced", "released", ...), `token` the token it led under."""

    def __init__(self, group_id: Any, member_id: Any, error: fencekeeper.LeaseLostError | None, token: fencekeeper.Token):
        self.group_id = group_id
        self.member_id = member_id
        self.error = error
        self.token = token

    def __repr__(self) -> str:
        why = self.error.why if self.error else None
        return f"<LeadershipLost: group {self.group_id}: --> {self.member_id} ({why})>"


class FencekeeperLock(locking.Lock):
    """A tooz lock on a fencekeeper resource. While held, `token` is its fencing token and `lease` the
    library's Lease (writes through `lease.put` carry the token; `lease.lost` is the loss signal)."""

    def __init__(self, name: Any, driver: FencekeeperDriver):
        super().__init__(name)
        self._driver = driver
        self.resource = driver.resource("locks", name)
        self._lease: fencekeeper.Lease | None = None
        self._cancel = threading.Event()
        self._acquiring = threading.Lock()
        self._waiting = False

    @property
    def lease(self) -> fencekeeper.Lease | None:
        """The lease of the current (or last) acquisition; None before the first."""
        return self._lease

    @property
    def token(self) -> fencekeeper.Token | None:
        """The fencing token of the current acquisition, None when not held (lost or released)."""
        lease = self._lease
        return lease.token if lease is not None and lease.held else None

    def acquire(self, blocking: bool | float = True, shared: bool = False, timeout: float | None = None) -> bool:
        if self._lease is not None and self._lease.held:
            return False  # tooz locks are not reentrant
        wait = _wait(blocking, timeout)
        with self._acquiring:
            self._cancel = threading.Event()
            self._waiting = True
        try:
            with _translated():
                lease = self._driver.client.acquire(
                    self.resource, ttl=self._driver.ttl, wait=wait, cancel=self._cancel, shared=shared, holder=self._driver.holder
                )
        except tooz.ToozError as e:
            if isinstance(e.__cause__, (fencekeeper.ResourceHeldError, fencekeeper.TimeoutError, fencekeeper.CanceledError)):
                return False
            raise
        finally:
            with self._acquiring:
                self._waiting = False
        self._lease = lease
        error = lease.error
        if error is not None and error.why == "canceled":
            return False  # cancel() came between the grant and its answer: the library gave the grant back
        with self._driver._state:
            self._driver._held_locks.add(self)
        return True

    def release(self) -> bool:
        """Gives the lock up; True if it was still held (a lost lock was ended already: False)."""
        lease = self._lease
        with self._driver._state:
            self._driver._held_locks.discard(self)
        if lease is None:
            return False
        held = lease.held
        lease.release()
        return held

    def is_still_owner(self) -> bool:
        """Whether the lock may still be assumed held, by the lease's clock right now: False from the moment
        the library counts the lease lost (its deadline passed, or the server refused it), before any renewal
        or heartbeat runs."""
        lease = self._lease
        return lease is not None and lease.held

    @property
    def acquired(self) -> bool:
        """is_still_owner(), under the name some tooz drivers' locks give it."""
        return self.is_still_owner()

    def heartbeat(self) -> bool:
        """Looks at the lease's clock; False (and the lock dropped from the driver's) once it is lost."""
        if self.is_still_owner():
            return True
        with self._driver._state:
            self._driver._held_locks.discard(self)
        return False

    def cancel(self) -> None:
        """Ends a blocking acquire() waiting in line (it returns False). A held lock stays held: the library
        ends a granted lease whose cancel event is set, so the event is left alone then."""
        with self._acquiring:
            if self._waiting:
                self._cancel.set()


def _wait(blocking: bool | float, timeout: float | None) -> bool | float:
    """tooz's blocking/timeout as the library's wait: False, True, or at most that many seconds."""
    if blocking is False:
        return False
    if timeout is not None:
        return float(timeout)
    if blocking is True:
        return True
    return float(blocking)


class FencekeeperDriver(coordination.CoordinationDriverCachedRunWatchers):
    """`fencekeeper://HOST:PORT[,HOST:PORT...]?ttl=10&prefix=tooz/` (cleartext) or
    `fencekeeper+https://...` (TLS with the system's CAs). Options (URL query or get_coordinator keyword
    arguments): ttl (seconds, whole, at least 2), prefix (of every resource's name), holder (the label
    describe() shows; default the member id). A get_coordinator keyword only: credentials, a
    fencekeeper.Credentials (bearer token, CA, client certificate) for a server with authentication or TLS
    of its own (docs/authentication.md)."""

    CHARACTERISTICS = (
        coordination.Characteristics.DISTRIBUTED_ACROSS_THREADS,
        coordination.Characteristics.DISTRIBUTED_ACROSS_PROCESSES,
        coordination.Characteristics.DISTRIBUTED_ACROSS_HOSTS,
        coordination.Characteristics.LINEARIZABLE,
        coordination.Characteristics.SEQUENTIAL,
    )

    def __init__(self, member_id: Any, parsed_url: Any, options: dict[str, Any]):
        super().__init__(member_id, parsed_url, options)
        opts = utils.collapse(options)
        scheme = "https" if parsed_url.scheme.endswith("+https") else "http"
        self.servers = [f"{scheme}://{host.strip()}" for host in parsed_url.netloc.split(",") if host.strip()]
        self.ttl = float(opts.get("ttl", DEFAULT_TTL))
        self.prefix = str(opts.get("prefix", DEFAULT_PREFIX))
        self.holder = str(opts.get("holder") or _text(member_id))
        credentials = opts.get("credentials")
        if credentials is not None and not isinstance(credentials, fencekeeper.Credentials):
            raise tooz.ToozError("credentials must be a fencekeeper.Credentials, given as a get_coordinator keyword")
        self.credentials: fencekeeper.Credentials | None = credentials
        self._client: fencekeeper.Client | None = None
        self._held_locks: set[FencekeeperLock] = set()
        self._leaderships: dict[Any, fencekeeper.Leadership] = {}
        self._memberships: dict[Any, fencekeeper.Lease] = {}
        self._hooks_leadership_lost: dict[Any, coordination.Hooks] = collections.defaultdict(coordination.Hooks)
        self._state = threading.RLock()

    @property
    def client(self) -> fencekeeper.Client:
        """The library's client this driver acquires with (started); its `store` writes under any token."""
        if self._client is None:
            raise tooz.ToozError("the coordinator is not started")
        return self._client

    def resource(self, kind: str, name: Any) -> str:
        return f"{self.prefix}{kind}/{_text(name)}"

    def _start(self) -> None:
        # On sessions (the library's default), as etcd's own locks are: every lock and membership has the
        # driver's one TTL, so they share one session, renewed once; leaders campaign on leases of their own.
        self._client = fencekeeper.Client(self.servers, holder=self.holder, credentials=self.credentials)

    def _stop(self) -> None:
        with self._state:
            locks = list(self._held_locks)
        for lock in locks:
            lock.release()
        with self._state:
            leaderships, self._leaderships = list(self._leaderships.values()), {}
            self._memberships.clear()  # tooz's stop() left them; what it could not leave ends with the client
        for leadership in leaderships:
            leadership.resign()
        if self._client is not None:
            self._client.close()  # releases what is left (group memberships)
            self._client = None

    # Locks.

    def get_lock(self, name: Any) -> FencekeeperLock:
        return FencekeeperLock(name, self)

    # Heartbeats: the library renews every lease on its own KeepAlive thread, every third of its TTL,
    # whether or not heartbeat() is called. heartbeat() is where a loss is acted on without the
    # watchers: lost locks are dropped, and lost leaderships end (their LeadershipLost hooks run).

    def heartbeat(self) -> float:
        with self._state:
            locks = list(self._held_locks)
        for lock in locks:
            lock.heartbeat()
        self._end_lost_leaderships()
        with self._state:
            for group_id, lease in list(self._memberships.items()):
                if not lease.held:
                    del self._memberships[group_id]
                    self._joined_groups.discard(group_id)
        return self.ttl / 3

    # Leader election: run_watchers() campaigns (without waiting in line) for every group with an
    # elected-as-leader hook; the one whose acquire succeeds runs the hooks with a LeaderElected that carries
    # the token. A leadership lasts until its lease is lost or stand_down_group_leader() resigns it.

    def watch_leadership_lost(self, group_id: Any, callback: Callable[[LeadershipLost], Any]) -> None:
        """Calls callback(LeadershipLost) when this member's leadership of group_id ends other than by
        stand_down_group_leader(): from heartbeat() or run_watchers(), whichever sees it first."""
        self._hooks_leadership_lost[group_id].append(callback)

    def unwatch_leadership_lost(self, group_id: Any, callback: Callable[[LeadershipLost], Any]) -> None:
        self._hooks_leadership_lost[group_id].remove(callback)

    def get_leadership(self, group_id: Any) -> fencekeeper.Leadership | None:
        """This member's leadership of group_id while it may assume it leads (its token, signal, lease)."""
        with self._state:
            leadership = self._leaderships.get(group_id)
        return leadership if leadership is not None and leadership.leading else None

    def _end_lost_leaderships(self) -> None:
        ended = []
        with self._state:
            for group_id, leadership in list(self._leaderships.items()):
                if not leadership.leading:
                    del self._leaderships[group_id]
                    ended.append((group_id, leadership))
        for group_id, leadership in ended:
            self._hooks_leadership_lost[group_id].run(LeadershipLost(group_id, self._member_id, leadership.signal.error, leadership.token))

    def run_elect_coordinator(self) -> None:
        self._end_lost_leaderships()
        for group_id, hooks in list(self._hooks_elected_leader.items()):
            with self._state:
                if group_id in self._leaderships:
                    continue
            try:
                with _translated():
                    leadership = self.client.campaign(self.resource("leaders", group_id), _text(self._member_id), ttl=self.ttl, wait=False, holder=self.holder)
            except tooz.ToozError as e:
                if isinstance(e.__cause__, fencekeeper.ResourceHeldError):
                    continue
                raise
            with self._state:
                self._leaderships[group_id] = leadership
            hooks.run(LeaderElected(group_id, self._member_id, leadership))

    def run_watchers(self, timeout: float | None = None) -> list[Any]:
        result = super().run_watchers(timeout)
        self.run_elect_coordinator()
        return result

    def stand_down_group_leader(self, group_id: Any) -> bool:
        """Resigns this member's leadership of group_id, so that another candidate is elected at its next
        run_watchers(). This member campaigns again at its own next run_watchers() while it still watches."""
        with self._state:
            leadership = self._leaderships.pop(group_id, None)
        if leadership is None:
            return False
        leading = leadership.leading
        leadership.resign()
        return leading

    def get_leader(self, group_id: Any) -> coordination.CoordinatorResult:
        def leader() -> Any:
            current = self.client.leader(self.resource("leaders", group_id))
            if current is None:
                return None
            return current.value if isinstance(self._member_id, bytes) else current.value.decode("utf-8")

        return _result(leader)

    # Group membership: a member is a shared holder of <prefix>groups/<group>, its capabilities the value
    # it published. A group exists while it has members; fencekeeper keeps no list of groups.

    def create_group(self, group_id: Any) -> coordination.CoordinatorResult:
        """Nothing to create: a group exists while it has members (joining needs no create_group)."""
        return _result(lambda: None)

    def join_group(self, group_id: Any, capabilities: Any = b"") -> coordination.CoordinatorResult:
        def join() -> None:
            with self._state:
                if group_id in self._memberships and self._memberships[group_id].held:
                    raise coordination.MemberAlreadyExist(group_id, self._member_id)
            value = capabilities if isinstance(capabilities, (bytes, bytearray)) else str(capabilities).encode("utf-8")
            lease = self.client.acquire(self.resource("groups", group_id), ttl=self.ttl, shared=True, wait=True, value=bytes(value), holder=_text(self._member_id))
            with self._state:
                self._memberships[group_id] = lease
                self._joined_groups.add(group_id)

        return _result(join)

    def leave_group(self, group_id: Any) -> coordination.CoordinatorResult:
        def leave() -> None:
            with self._state:
                lease = self._memberships.pop(group_id, None)
                self._joined_groups.discard(group_id)
            if lease is None:
                raise coordination.MemberNotJoined(group_id, self._member_id)
            lease.release()

        return _result(leave)

    def _members(self, group_id: Any) -> list[fencekeeper.Holder]:
        return list(self.client.describe(self.resource("groups", group_id)).holders)

    def _member_type(self, holder: str) -> Any:
        return holder.encode("utf-8") if isinstance(self._member_id, bytes) else holder

    def get_members(self, group_id: Any) -> coordination.CoordinatorResult:
        return _result(lambda: {self._member_type(h.holder) for h in self._members(group_id)})

    def get_member_capabilities(self, group_id: Any, member_id: Any) -> coordination.CoordinatorResult:
        def capabilities() -> bytes:
            for h in self._members(group_id):
                if h.holder == _text(member_id):
                    return h.value
            raise coordination.MemberNotJoined(group_id, member_id)

        return _result(capabilities)

    def get_member_info(self, group_id: Any, member_id: Any) -> coordination.CoordinatorResult:
        def info() -> dict[str, Any]:
            for h in self._members(group_id):
                if h.holder == _text(member_id):
                    return {"capabilities": h.value, "generation": h.token.generation, "ttl": h.ttl}
            raise coordination.MemberNotJoined(group_id, member_id)

        return _result(info)

    @staticmethod
    def get_groups() -> coordination.CoordinatorResult:
        """fencekeeper keeps no list of groups (nor of resources): tooz.NotImplemented."""
        raise tooz.NotImplemented

    @staticmethod
    def delete_group(group_id: Any) -> coordination.CoordinatorResult:
        """A group ends with its last member's lease: tooz.NotImplemented."""
        raise tooz.NotImplemented

    @staticmethod
    def update_capabilities(group_id: Any, capabilities: Any) -> coordination.CoordinatorResult:
        """A shared holder's value is set when it joins; leave and join again to change it: tooz.NotImplemented."""
        raise tooz.NotImplemented
