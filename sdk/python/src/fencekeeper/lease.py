"""A held lease: its token, a loss signal that fires the moment the lease can no longer be assumed held,
and the store calls a holder makes, with the token attached. Reading `lost` or `held`, or calling
check(), looks at the clock first, so a process that was paused past the deadline sees the loss on its
first look, before the keep-alive thread has run. A lease is kept alive by its keeper (_keeper.py): an
etcd lease of its own, or a session it shares with other leases, whose deadline is its deadline and whose
loss is its loss."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterator, Sequence

from fencekeeper._deadline import now, to_datetime
from fencekeeper._keepalive import Emit
from fencekeeper._keeper import Keeper
from fencekeeper.errors import LeaseLostError, LeaseNotHeldError, LossCause, StaleTokenError
from fencekeeper.store import Commit, Delete, Entry, FenceModeName, GetResult, Put, Store, Value, _bytes
from fencekeeper.token import Token
from fencekeeper.v1 import lease_pb2


@dataclass
class LeaseContext:
    """What a lease needs from the client that acquired it."""

    store: Store
    fence_mode: FenceModeName
    """The fence mode of writes through a lease when a call does not say."""
    ended: Callable[[Lease], None]
    """Called once when the lease ends, whatever the cause."""
    emit: Emit | None


class Lease:
    """Made by Client.acquire(). `cancel`, once set, ends the lease (why "canceled")."""

    def __init__(self, token: Token, keeper: Keeper, ctx: LeaseContext, cancel: threading.Event | None):
        self.token = token
        self.ttl = keeper.ttl
        """The TTL etcd granted (the session's, for a lease on a session), in seconds."""
        self._keeper = keeper
        self._ctx = ctx
        self._lock = keeper.lock
        self._cancel = cancel
        self._lost = threading.Event()
        self._error: LeaseLostError | None = None
        self._ending: Future[None] | None = None
        self._listeners: list[Callable[[LeaseLostError], None]] = []
        keeper.attach(self)

    # The loss signal.

    @property
    def lost(self) -> threading.Event:
        """Set once the lease can no longer be assumed held; `error` then says why."""
        self.look()
        return self._lost

    @property
    def held(self) -> bool:
        """Whether the lease may still be assumed held, by the clock right now."""
        return not self.lost.is_set()

    @property
    def error(self) -> LeaseLostError | None:
        """Why the lease ended, once it has."""
        self.look()
        return self._error

    def check(self) -> None:
        """Raises the LeaseLostError once the lease is lost; call it right before acting on the lease."""
        if self.lost.is_set():
            assert self._error is not None
            raise self._error

    def on_lost(self, listener: Callable[[LeaseLostError], None]) -> None:
        """Calls listener(error) once the lease ends (at once if it has), on the thread that ends it: keep it short."""
        with self._lock:
            if self._error is None:
                self._listeners.append(listener)
                return
        listener(self._error)

    @property
    def valid_until(self) -> datetime:
        """Until when the lease may be assumed held, on the wall clock: the send time of the last confirmed
        renewal + TTL - drift margin; on a session, of the session's last confirmed renewal."""
        return self._keeper.deadline.valid_until

    @property
    def valid_until_monotonic(self) -> float:
        """The same deadline on time.monotonic()'s clock."""
        return self._keeper.deadline.mono

    @property
    def last_confirmed_at(self) -> datetime:
        """When the last renewal was confirmed (or the Acquire answered)."""
        return self._keeper.deadline.last_confirmed_at

    def release(self) -> None:
        """Gives the lease up: renewals stop, the loss signal fires (why "released"), the server releases it.
        Idempotent; never raises. Returns once the server answered, or gave up."""
        self._end("released")
        if self._ending is not None:
            self._ending.result()

    # Calls through the lease.

    def put(self, key: str, value: Value, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return self._write(lambda m: self._ctx.store.put(self.token, key, value, mode=m, idempotency_key=idempotency_key), mode)

    def delete(self, key: str, *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return self._write(lambda m: self._ctx.store.delete(self.token, key, mode=m, idempotency_key=idempotency_key), mode)

    def txn(self, ops: Sequence[Put | Delete], *, mode: FenceModeName | None = None, idempotency_key: str | None = None) -> Commit:
        return self._write(lambda m: self._ctx.store.txn(self.token, ops, mode=m, idempotency_key=idempotency_key), mode)

    def proclaim(self, value: Value) -> int:
        """Publishes a new value without giving the resource up (docs/election.md); returns the etcd revision
        at which it took effect. Checked first, as a write is; refused as stale, it ends the lease."""
        calls = self._ctx.store._calls
        req = lease_pb2.ProclaimRequest(token=self.token.to_proto(), value=_bytes(value))
        revision = 0

        def call(_: Any) -> Any:
            nonlocal revision
            revision = calls.run(lambda c: c.lease.Proclaim(req, timeout=calls.timeout), True).revision
            return None

        self._write(call, None)
        return revision

    def get(self, key: str) -> GetResult:
        self.check()
        return self._ctx.store.get(self.token.resource, key)

    def list(self, *, prefix: str = "", keys_only: bool = False, page_size: int = 0) -> Iterator[Entry]:
        self.check()
        return self._ctx.store.list(self.token.resource, prefix=prefix, keys_only=keys_only, page_size=page_size)

    def _write(self, call: Callable[[FenceModeName], Commit], mode: FenceModeName | None) -> Commit:
        self.check()
        try:
            return call(mode or self._ctx.fence_mode)
        except (StaleTokenError, LeaseNotHeldError) as e:
            self._end("fenced", e)
            raise

    def look(self) -> bool:
        """Looks at the clock (its keeper's deadline) and the cancel event: True once the lease has ended."""
        if self._lost.is_set():
            return True
        self._keeper.look()
        # Under the lock: a loss that another thread is deciding is complete, event set, once it is free.
        with self._lock:
            if self._lost.is_set():
                return True
        if self._cancel is not None and self._cancel.is_set():
            self._end("canceled")
        return self._lost.is_set()

    def _end(self, why: LossCause, cause: BaseException | None = None) -> None:
        """Ends this lease on its own (released, fenced, canceled); a session it was on lives on."""
        if self._error is None:
            self._finish(why, cause, self._keeper.lease_ended(self, why))

    def _finish(self, why: LossCause, cause: BaseException | None, ending: Future[None]) -> None:
        notify = self._mark(why, cause, ending)
        if notify is not None:
            notify()

    def _mark(self, why: LossCause, cause: BaseException | None, ending: Future[None]) -> Callable[[], None] | None:
        """Marks the lease ended (the error, the event) with the lock held, so that no look sees it half
        ended; returns what tells the others (listeners, events), to be called once the lock is released.
        `ending` is the cleanup on the server. None if it had ended already."""
        with self._lock:
            if self._error is not None:
                return None
            valid_until = self.valid_until
            error = LeaseLostError(
                _loss_message(self.token, why, valid_until, cause, self._keeper.shared),
                why,
                self.token,
                valid_until,
                self.last_confirmed_at,
                to_datetime(now().wall),
            )
            error.__cause__ = cause
            self._error = error
            self._ending = ending
            self._lost.set()
            listeners, self._listeners = self._listeners, []

        def notify() -> None:
            self._ctx.ended(self)
            for listener in listeners:
                listener(error)
            if self._ctx.emit:
                released = why in ("released", "canceled")
                self._ctx.emit({"type": "released", "token": self.token} if released else {"type": "lost", "error": error})

        return notify

    def __repr__(self) -> str:
        return f"<Lease {self.token} {'held' if not self._lost.is_set() else 'lost'}>"


def _loss_message(t: Token, why: LossCause, valid_until: datetime, cause: Any, on_session: bool) -> str:
    lease = f'the lease on "{t.resource}" (generation {t.generation}{f", on session {t.lease_id}" if on_session else ""})'
    if why == "deadline":
        of = " of its session" if on_session else ""
        return f"{lease} is lost: no renewal{of} was confirmed before its deadline {valid_until.isoformat()}"
    if why == "not-found":
        gone = "its session expired or was closed" if on_session else "it expired or was released"
        return f"{lease} is lost: the server says {gone}"
    if why == "preempted":
        by = f' by "{cause.by_principal}"' if getattr(cause, "by_principal", None) else ""
        now_at = f" (now generation {cause.by_generation})" if getattr(cause, "by_generation", None) else ""
        return f"{lease} is lost: it was preempted{by}{now_at}; its writes are refused"
    if why == "fenced":
        return f"{lease} is lost: a write under its token was refused ({cause})"
    if why == "released":
        return f"{lease} was released"
    return f"{lease} ended: the cancel event given to acquire() was set"
