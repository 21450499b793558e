"""What keeps a Lease alive: an etcd lease of its own (OwnLease), or a session that many leases share
(Session, as etcd's concurrency.Session and Chubby's sessions). A keeper is what the KeepAlive stream
renews and what has a deadline: the send time of its last confirmed renewal + TTL - drift margin. When it
is lost (its deadline passed, or the server says it is gone) every lease it keeps is lost with it, at
once; a lease that ends on its own (released, fenced, canceled) leaves a session to the others."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from fencekeeper._deadline import Deadline, Instant, to_datetime
from fencekeeper._keepalive import Emit, KeepAlive
from fencekeeper.errors import FencekeeperError, LeaseNotFoundError, LossCause, PreemptedError
from fencekeeper.token import Token



class Lease(Protocol):
    """What a keeper needs of the leases it keeps (fencekeeper.lease.Lease is one): lease.py builds on this
    module, one way."""

    @property
    def token(self) -> Token: ...

    def look(self) -> bool: ...

    def _mark(self, why: LossCause, cause: BaseException | None, ending: Future[None]) -> Callable[[], None] | None: ...

    def _finish(self, why: LossCause, cause: BaseException | None, ending: Future[None]) -> None: ...


def done() -> Future[None]:
    f: Future[None] = Future()
    f.set_result(None)
    return f


@dataclass
class KeeperContext:
    keepalive: KeepAlive
    emit: Emit | None
    drift: Callable[[float], float]
    release: Callable[[Token], Future[None]]
    """Gives an acquisition up on the server, in the background; the future never fails."""
    close_session: Callable[[int], Future[None]]
    """Closes a session on the server, in the background; the future never fails."""


class Keeper:
    shared = False
    """Whether many leases share it (a session)."""

    def __init__(self, lease_id: int, ttl: float, sent_at: Instant, answered_at: Instant, ctx: KeeperContext):
        self.lease_id = lease_id
        self.ttl = ttl
        """The TTL etcd granted, in seconds."""
        self.interval = ttl / 3
        self.deadline = Deadline(sent_at, ttl, answered_at, ctx.drift)
        self.ctx = ctx
        self.lock = ctx.keepalive.lock
        self.ended_why: LossCause | None = None
        self._first_renewal_at = sent_at.mono + self.interval

    def start(self) -> None:
        """Starts renewing: the first renewal goes out a renewal interval after the grant was sent."""
        if self.ended_why is None:
            self.ctx.keepalive.add(self, self._first_renewal_at)

    def look(self) -> bool:
        """Looks at the clock: the keeper, and every lease it keeps, is lost once its deadline has passed."""
        if self.ended_why is None and self.deadline.passed():
            self.lose("deadline")
        return self.ended_why is not None

    def tick(self) -> None:
        raise NotImplementedError

    def confirmed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        with self.lock:
            if self.ended_why is not None:
                return
            in_time = self.deadline.confirm(sent_at, ttl, at)
        if not in_time:
            self.lose("deadline")
        elif self.ctx.emit:
            self.renewed(sent_at, ttl, at)

    def refused(self, error: FencekeeperError) -> None:
        if self.ended_why is not None:
            return
        if isinstance(error, LeaseNotFoundError):
            self.lose("not-found", error)
        elif isinstance(error, PreemptedError):
            self.lose("preempted", error)
        elif self.ctx.emit:
            self.renewal_failed(error)

    def _renewal(self, sent_at: Instant, ttl: float, at: Instant) -> dict[str, Any]:
        return {
            "sent_at": to_datetime(sent_at.wall),
            "confirmed_at": to_datetime(at.wall),
            "ttl": ttl,
            "valid_until": self.deadline.valid_until,
        }

    def attach(self, lease: Lease) -> None:
        """Takes lease on; it is ended when the keeper is lost."""
        raise NotImplementedError

    def lease_ended(self, lease: Lease, why: LossCause) -> Future[None]:
        """A lease ended on its own (released, fenced, canceled): the cleanup on the server."""
        raise NotImplementedError

    def lose(self, why: LossCause, cause: BaseException | None = None) -> None:
        """The keeper is lost (its deadline passed, or the server says it is gone), and every lease on it."""
        raise NotImplementedError

    def renewed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        raise NotImplementedError

    def renewal_failed(self, error: FencekeeperError) -> None:
        raise NotImplementedError


class OwnLease(Keeper):
    """An etcd lease that backs one acquisition alone."""

    lease: Lease | None = None
    lock_delay = False
    """Acquired with a lock-delay: lost at its deadline, it is left to expire, so that the delay applies."""

    def attach(self, lease: Lease) -> None:
        self.lease = lease

    def tick(self) -> None:
        if self.lease is not None:
            self.lease.look()
        else:
            self.look()

    def lease_ended(self, lease: Lease, why: LossCause) -> Future[None]:
        with self.lock:
            if self.ended_why is None:
                self.ended_why = why
                self.ctx.keepalive.remove(self.lease_id)
        return self.ctx.release(lease.token)

    def lose(self, why: LossCause, cause: BaseException | None = None) -> None:
        with self.lock:
            if self.ended_why is not None:
                return
            self.ended_why = why
            self.ctx.keepalive.remove(self.lease_id)
            if self.lease is None:
                return
            # A lease the server says is gone needs no release; one past its deadline may still be held in etcd,
            # and is released then, unless it has a lock-delay: releasing would end, without the delay, a lease
            # whose writes sent before the deadline may still be on their way, which is what the delay is for.
            left = why in ("not-found", "preempted") or (why == "deadline" and self.lock_delay)
            ending = done() if left else self.ctx.release(self.lease.token)
            notify = self.lease._mark(why, cause, ending)
        if notify is not None:
            notify()

    def renewed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        if self.lease is not None and self.ctx.emit:
            self.ctx.emit({"type": "renewed", "token": self.lease.token, **self._renewal(sent_at, ttl, at)})

    def renewal_failed(self, error: FencekeeperError) -> None:
        if self.lease is not None and self.ctx.emit:
            self.ctx.emit({"type": "renewal-failed", "token": self.lease.token, "error": error})


class Session(Keeper):
    """A session: one etcd lease that many acquisitions share. One renewal keeps them all; each still has a
    generation and a token of its own (whose lease_id is the session id), and Release ends one of them."""

    shared = True

    def __init__(self, session_id: int, ttl: float, sent_at: Instant, answered_at: Instant, ctx: KeeperContext):
        super().__init__(session_id, ttl, sent_at, answered_at, ctx)
        self._leases: set[Lease] = set()
        self._closing: Future[None] | None = None
        if ctx.emit:
            ctx.emit({"type": "session-opened", "session_id": session_id, "ttl": ttl, "valid_until": self.deadline.valid_until})

    def attach(self, lease: Lease) -> None:
        with self.lock:
            if self.ended_why is None:
                self._leases.add(lease)
                return
            why, closing = self.ended_why, self._closing or done()
        # A session that has ended takes no lease: one attached too late is lost with it.
        lease._finish(why, None, closing)

    def tick(self) -> None:
        if not self.look():
            with self.lock:
                leases = list(self._leases)
            for lease in leases:
                lease.look()

    def lease_ended(self, lease: Lease, why: LossCause) -> Future[None]:
        # Only this acquisition ends; the session and its other leases live on.
        with self.lock:
            self._leases.discard(lease)
        return self.ctx.release(lease.token)

    def lose(self, why: LossCause, cause: BaseException | None = None) -> None:
        # Past its deadline the session may still be alive in etcd: close it, so that its resources pass on now.
        self._finish(why, cause, lambda: self.ctx.close_session(self.lease_id) if why == "deadline" else done())

    def close(self) -> Future[None]:
        """Ends every lease on the session as released and closes it on the server (Client.close())."""
        self._finish("released", None, lambda: self.ctx.close_session(self.lease_id))
        return self._closing or done()

    def _finish(self, why: LossCause, cause: BaseException | None, closing: Callable[[], Future[None]]) -> None:
        with self.lock:
            if self.ended_why is not None:
                return
            self.ended_why = why
            self._closing = closing()
            self.ctx.keepalive.remove(self.lease_id)
            leases, self._leases = list(self._leases), set()
            # Every lease on it is marked lost before the lock is free: no look sees one held after this.
            notifies = [lease._mark(why, cause, self._closing) for lease in leases]
        if self.ctx.emit:
            self.ctx.emit({"type": "session-ended", "session_id": self.lease_id, "why": why, "leases": len(leases)})
        for notify in notifies:
            if notify is not None:
                notify()

    def renewed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        if self.ctx.emit:
            self.ctx.emit({"type": "session-renewed", "session_id": self.lease_id, "leases": len(self._leases), **self._renewal(sent_at, ttl, at)})

    def renewal_failed(self, error: FencekeeperError) -> None:
        if self.ctx.emit:
            self.ctx.emit({"type": "session-renewal-failed", "session_id": self.lease_id, "error": error})
