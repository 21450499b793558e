"""The one KeepAlive stream of a client, and the scheduler that decides what goes out on it and when.

One daemon thread runs the scheduler: it sleeps until the earliest of every lease's deadline and next due
renewal (never rounded to a tick), gives up the leases whose deadline has passed first, then sends every
renewal due within the next 50 ms in one KeepAliveRequest (lease_ids, at most 10,000 per message), all
with the one send time from which each lease's deadline counts once its answer confirms it. A lease has
at most one renewal unanswered at a time. Another thread per stream reads the answers.

A stream that fails or ends is opened again on the next server, at once and then with backoff; the
renewals it left unanswered go out again on the new one. So is a stream that leaves a renewal unanswered
for a whole renewal interval while answering nothing else in that time (a hung server or connection,
whose connection is dropped too). A server that goes on answering, only slowly, keeps its stream: a new
stream would queue behind the renewals it still works on. Losing a lease is not decided here: each lease
does that from its own deadline, on a look or when the scheduler wakes it.

The scheduler looks at every lease at each wake: cheap for the hundreds of leases a Python process
holds; the TypeScript client keeps two heaps instead, for tens of thousands."""

from __future__ import annotations

import queue
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import grpc

from fencekeeper._deadline import Deadline, Instant, now
from fencekeeper._error_mapping import from_status
from fencekeeper._servers import Servers
from fencekeeper.errors import FencekeeperError
from fencekeeper.v1 import lease_pb2

RETRY = 0.2
"""After an answer that proves nothing, try again this soon (or at the renewal interval, if sooner)."""
BATCH_WINDOW = 0.05
"""Renewals due within this long of the one that woke the scheduler go out with it, a little early."""
RECHECK = 2 * BATCH_WINDOW
"""How often a renewal unanswered for a whole interval is looked at again while its stream answers others."""
MAX_IDS_PER_MESSAGE = 10_000

Emit = Callable[[dict[str, Any]], None]


class Renewable(Protocol):
    """What the scheduler needs of a kept lease."""

    lease_id: int
    interval: float
    deadline: Deadline

    def tick(self) -> None:
        """Looks at the clock, and at the cancel events of the leases it keeps, at each wake of the scheduler."""

    def confirmed(self, sent_at: Instant, ttl: float, at: Instant) -> None:
        """A renewal sent at sent_at was answered at `at` with the TTL etcd granted, in seconds."""

    def refused(self, error: FencekeeperError) -> None:
        """A renewal was answered with an error."""


@dataclass(frozen=True)
class Backoff:
    """Reconnection backoff of the KeepAlive stream, in seconds: at once after the first failure in a row,
    then doubling from base up to max, with jitter."""

    base: float = 0.1
    max: float = 2.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        ceiling = min(self.max, self.base * 2 ** (failures - 1))
        return ceiling / 2 + random.random() * ceiling / 2


class _Entry:
    __slots__ = ("r", "next_at", "sent_at", "sent_on")

    def __init__(self, r: Renewable, next_at: float):
        self.r = r
        self.next_at = next_at
        """When the next renewal is due (monotonic seconds)."""
        self.sent_at: Instant | None = None
        """The unanswered renewal: when it was sent (shared by its whole message), and on which stream."""
        self.sent_on: _Stream | None = None


class _Stream:
    def __init__(self, url: str):
        self.url = url
        self.requests: queue.Queue[lease_pb2.KeepAliveRequest | None] = queue.Queue()
        self.answered_at = time.monotonic()
        """When an answer last arrived on it, or when it opened."""
        self.suspect_at: float | None = None
        """When the scheduler first found it hung; it is dropped if it still is on a later look."""
        self.call: Any = None

    def messages(self) -> Iterator[lease_pb2.KeepAliveRequest]:
        while (m := self.requests.get()) is not None:
            yield m

    def close(self) -> None:
        self.requests.put(None)
        if self.call is not None:
            self.call.cancel()


class KeepAlive:
    def __init__(self, servers: Servers, backoff: Backoff, emit: Emit | None):
        self.lock = threading.RLock()
        """Guards the scheduler's state, and each lease's deadline against the look that finds it passed."""
        self._wake = threading.Condition(self.lock)
        self._servers = servers
        self._backoff = backoff
        self._emit = emit
        self._entries: dict[int, _Entry] = {}
        self._stream: _Stream | None = None
        self._reconnect_at: float | None = None
        self._failures = 0
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, r: Renewable, first_at: float) -> None:
        """Keeps r alive from now on; its first renewal is due at first_at (monotonic seconds)."""
        with self.lock:
            if self._closed:
                return
            self._entries[r.lease_id] = _Entry(r, first_at)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fencekeeper-keepalive", daemon=True)
                self._thread.start()
            self._wake.notify()

    def remove(self, lease_id: int) -> None:
        """Stops renewing a lease. The stream closes with the last one."""
        with self.lock:
            if self._entries.pop(lease_id, None) is not None and not self._entries:
                self._stop()
            self._wake.notify()

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self._entries.clear()
            self._stop()
            self._wake.notify()

    # The scheduler thread.

    def _run(self) -> None:
        while True:
            with self.lock:
                if self._closed:
                    return
                wait = self._next_wake() - time.monotonic()
                if wait > 0:
                    # Nothing to keep: sleep until add() or close() wakes it.
                    self._wake.wait(None if wait == float("inf") else wait)
                    continue
            self._tick()

    def _next_wake(self) -> float:
        """The earliest deadline, due renewal (unless a reconnection is pending) or reconnection."""
        at = time.monotonic()
        nxt = float("inf")
        for e in self._entries.values():
            nxt = min(nxt, at + e.r.deadline.left())
            if self._reconnect_at is None:
                nxt = min(nxt, e.next_at)
        if self._reconnect_at is not None and self._entries:
            nxt = min(nxt, self._reconnect_at)
        return nxt

    def _tick(self) -> None:
        # Deadlines first: a lease whose deadline passed is lost, whatever a renewal sent now would answer.
        # Each lease ends itself outside the lock (it calls its listeners, and remove()).
        with self.lock:
            kept = [e.r for e in self._entries.values()]
        for r in kept:
            r.tick()
        events: list[dict[str, Any]] = []
        with self.lock:
            at = time.monotonic()
            if self._reconnect_at is not None and at >= self._reconnect_at:
                self._reconnect_at = None
                if self._entries and self._stream is None:
                    events.append(self._open())
            if self._reconnect_at is None and any(e.next_at <= at + BATCH_WINDOW for e in self._entries.values()):
                events += self._flush()
        self._report(events)

    def _flush(self) -> list[dict[str, Any]]:
        """Sends every renewal due within the batch window (with the lock held)."""
        events: list[dict[str, Any]] = []
        s = self._stream
        if s is None:
            events.append(self._open())
            s = self._stream
        assert s is not None
        sent_at = now()
        until = sent_at.mono + BATCH_WINDOW
        ids: list[int] = []
        hung: _Entry | None = None
        for e in self._entries.values():
            if e.next_at > until:
                continue
            if e.sent_on is s and e.sent_at is not None:
                # Its last renewal on this stream is unanswered: the next one waits for it. Past a whole
                # interval the stream may be hung: look again shortly, until it answers or is dropped.
                if sent_at.mono - e.sent_at.mono >= e.r.interval:
                    hung = hung or e
                    e.next_at = sent_at.mono + RECHECK
                else:
                    e.next_at = e.sent_at.mono + e.r.interval
                continue
            e.sent_at, e.sent_on = sent_at, s
            e.next_at = sent_at.mono + e.r.interval
            ids.append(e.r.lease_id)
        for i in range(0, len(ids), MAX_IDS_PER_MESSAGE):
            chunk = ids[i : i + MAX_IDS_PER_MESSAGE]
            s.requests.put(lease_pb2.KeepAliveRequest(lease_ids=chunk))
            if self._emit:
                events.append({"type": "keepalive-sent", "url": s.url, "leases": len(chunk)})
        if hung is not None:
            events += self._fail_if_hung(s, hung, sent_at.mono)
        return events

    def _fail_if_hung(self, s: _Stream, e: _Entry, at: float) -> list[dict[str, Any]]:
        """Drops the stream if e's renewal is still unanswered a whole interval after it was sent and nothing
        at all was answered on the stream for as long, on two looks in a row: the reader thread, which may
        have been stalled with the rest of the process, gets the time between them to read what arrived."""
        if at - s.answered_at < e.r.interval:
            s.suspect_at = None
            return []
        if s.suspect_at is None or at - s.suspect_at < BATCH_WINDOW:
            s.suspect_at = s.suspect_at or at
            return []
        return self._fail(s, f"no answer to a renewal of lease {e.r.lease_id} within {e.r.interval * 1000:.0f} ms", hung=True)

    # The stream.

    def _open(self) -> dict[str, Any]:
        url = self._servers.current
        s = _Stream(url)
        self._stream = s
        s.call = self._servers.connection("stream", url).lease.KeepAlive(s.messages())
        threading.Thread(target=self._read, args=(s,), name="fencekeeper-keepalive-read", daemon=True).start()
        return {"type": "stream-opened", "url": url}

    def _read(self, s: _Stream) -> None:
        error = "the server ended the KeepAlive stream"
        try:
            for answer in s.call:
                self._answer(s, answer)
        except grpc.RpcError as e:
            error = f"{e.code().name}: {e.details()}" if isinstance(e, grpc.Call) else str(e)
        with self.lock:
            events = self._fail(s, error, hung=False)
        self._report(events)

    def _answer(self, s: _Stream, answer: lease_pb2.KeepAliveResponse) -> None:
        at = now()
        matched: list[tuple[Renewable, Instant, lease_pb2.LeaseRenewal | lease_pb2.KeepAliveResponse]] = []
        with self.lock:
            if self._stream is not s:
                return
            s.answered_at, s.suspect_at = at.mono, None
            self._failures = 0
            for r in answer.renewals or [answer]:
                e = self._entries.get(r.lease_id)
                if e is None or e.sent_on is not s or e.sent_at is None:
                    continue
                matched.append((e.r, e.sent_at, r))
                e.sent_at = e.sent_on = None
                if r.HasField("error"):
                    e.next_at = at.mono + min(RETRY, e.r.interval)
        for renewable, sent_at, r in matched:
            if r.HasField("error"):
                renewable.refused(from_status(r.error))
            elif r.HasField("ttl"):
                renewable.confirmed(sent_at, r.ttl.seconds + r.ttl.nanos / 1e9, at)
        with self.lock:
            self._wake.notify()  # deadlines moved, retries are due

    def _fail(self, s: _Stream, error: str, hung: bool) -> list[dict[str, Any]]:
        """Drops a stream that failed (with the lock held); renewals it left unanswered go out again on the next one."""
        if self._stream is not s:
            return []
        self._stream = None
        s.close()
        if hung:
            # A hung connection may be a dead one: the next attempt on that server opens a fresh connection.
            self._servers.reset("stream", s.url)
        self._servers.failed(s.url)
        at = time.monotonic()
        for e in self._entries.values():
            if e.sent_on is s:
                e.sent_at = e.sent_on = None
                e.next_at = at
        if not self._entries:
            return []
        retry_in = self._backoff.delay(self._failures)
        self._failures += 1
        self._reconnect_at = at + retry_in
        self._wake.notify()
        return [{"type": "stream-failed", "url": s.url, "error": error, "retry_in": retry_in}]

    def _stop(self) -> None:
        self._reconnect_at = None
        s, self._stream = self._stream, None
        if s is not None:
            s.close()

    def _report(self, events: list[dict[str, Any]]) -> None:
        if self._emit:
            for e in events:
                self._emit(e)
