"""A held lease: its token, a loss signal that fires the moment the lease can no longer be assumed held,
and the store calls a holder makes, with the token attached. Reading `lost` or `held`, or calling
check(), looks at the clock first, so a process that was paused past the deadline sees the loss on its
first look, before the keep-alive thread has run."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Iterator, Sequence

from fencekeeper._deadline import Deadline, Instant, now, to_datetime
from fencekeeper._keepalive import Emit, KeepAlive
from fencekeeper.errors import FencekeeperError, LeaseLostError, LeaseNotFoundError, LeaseNotHeldError, LossCause, StaleTokenError
from fencekeeper.store import Commit, Delete, Entry, FenceModeName, GetResult, Put, Store, Value
from fencekeeper.token import Token


@dataclass
class LeaseContext:
    """What a lease needs from the client that acquired it."""

    keepalive: KeepAlive
    store: Store
    fence_mode: FenceModeName
    """The fence mode of writes through a lease when a call does not say."""
    drift: Callable[[float], float]
    release: Callable[[Token], Future[None]]
    """Gives the lease up on the server, in the background; the future never fails."""
    ended: Callable[[Lease], None]
    """Called once when the lease ends, whatever the cause."""
    emit: Emit | None


class Lease:
    """Made by Client.acquire(). `cancel`, once set, ends the lease (why "canceled")."""

    def __init__(self, token: Token, ttl: float, sent_at: Instant, answered_at: Instant, ctx: LeaseContext, cancel: threading.Event | None):
        self.token = token
        self.ttl = ttl
        """The TTL etcd granted, in seconds."""
        self.lease_id = token.lease_id
        self.interval = ttl / 3
        """Renewed every third of its TTL."""
        self.deadline = Deadline(sent_at, ttl, answered_at, ctx.drift)
        self._ctx = ctx
        self._lock = ctx.keepalive.lock
        self._cancel = cancel
        self._lost = threading.Event()
        self._error: LeaseLostError | None = None
        self._ending: Future[None] | None = None
        self._listeners: list[Callable[[LeaseLostError], None]] = []

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
        renewal + TTL - drift margin."""
        return self.deadline.valid_until

    @property
    def valid_until_monotonic(self) -> float:
        """The same deadline on time.monotonic()'s clock."""
        return self.deadline.mono

    @property
    def last_confirmed_at(self) -> datetime:
        """When the last renewal was confirmed (or the Acquire answered)."""
        return self.deadline.last_confirmed_at

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

    # What the keep-alive scheduler calls (fencekeeper._keepalive.Renewable).

    def look(self) -> bool:
        """Looks at the clock and the cancel event: True once the lease has ended."""
        if self._lost.is_set():
            return True
        if self.deadline.passed():
            self._end("deadline")
        elif self._cancel is not None and self._cancel.is_set():
            self._end("canceled")
        return self._lost.is_set()

    def confirmed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        with self._lock:
            if self._error is not None:
                return
            in_time = self.deadline.confirm(sent_at, ttl, at)
        if not in_time:
            self._end("deadline")
        elif self._ctx.emit:
            self._ctx.emit(
                {
                    "type": "renewed",
                    "token": self.token,
                    "sent_at": to_datetime(sent_at.wall),
                    "confirmed_at": to_datetime(at.wall),
                    "ttl": ttl,
                    "valid_until": self.valid_until,
                }
            )

    def refused(self, error: FencekeeperError) -> None:
        if isinstance(error, LeaseNotFoundError):
            self._end("not-found", error)
        elif self._ctx.emit and self._error is None:
            self._ctx.emit({"type": "renewal-failed", "token": self.token, "error": error})

    def _end(self, why: LossCause, cause: BaseException | None = None) -> None:
        with self._lock:
            if self._error is not None:
                return
            valid_until = self.deadline.valid_until
            lost_at = now()
            error = LeaseLostError(
                _loss_message(self.token, why, valid_until, cause),
                why,
                self.token,
                valid_until,
                self.deadline.last_confirmed_at,
                to_datetime(lost_at.wall),
            )
            error.__cause__ = cause
            self._error = error
            self._ctx.keepalive.remove(self.lease_id)
            # A lease the server says is gone needs no release; one past its deadline may still be held in etcd.
            self._ending = None if why == "not-found" else self._ctx.release(self.token)
            listeners, self._listeners = self._listeners, []
        self._lost.set()
        self._ctx.ended(self)
        for listener in listeners:
            listener(error)
        if self._ctx.emit:
            released = why in ("released", "canceled")
            self._ctx.emit({"type": "released", "token": self.token} if released else {"type": "lost", "error": error})

    def __repr__(self) -> str:
        return f"<Lease {self.token} {'held' if not self._lost.is_set() else 'lost'}>"


def _loss_message(t: Token, why: LossCause, valid_until: datetime, cause: Any) -> str:
    lease = f'the lease on "{t.resource}" (generation {t.generation})'
    if why == "deadline":
        return f"{lease} is lost: no renewal was confirmed before its deadline {valid_until.isoformat()}"
    if why == "not-found":
        return f"{lease} is lost: the server says it expired or was released"
    if why == "fenced":
        return f"{lease} is lost: a write under its token was refused ({cause})"
    if why == "released":
        return f"{lease} was released"
    return f"{lease} ended: the cancel event given to acquire() was set"
