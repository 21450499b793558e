"""How long a lease may be assumed held: from the moment a renewal (or the Acquire) was SENT, plus the TTL
etcd granted, minus a drift margin. An answer proves the lease was renewed at some point after it was
sent, so counting from the send is safe however long the answer took; counting from its arrival is not.
Once the deadline has passed nothing extends it. The deadline is kept on the monotonic clock (which stops
while a machine is suspended) and on the wall clock (which does not), and has passed when either says so.
Times are seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable


@dataclass(frozen=True)
class Instant:
    mono: float
    wall: float


def now() -> Instant:
    return Instant(time.monotonic(), time.time())


def default_drift(ttl: float) -> float:
    """The default drift margin: 100 ms plus 1% of the TTL."""
    return 0.1 + ttl / 100


def to_datetime(wall: float) -> datetime:
    return datetime.fromtimestamp(wall, timezone.utc)


class Deadline:
    """Not thread-safe on its own: the keep-alive's lock guards confirm() against the look that finds it passed."""

    def __init__(self, sent_at: Instant, ttl: float, answered_at: Instant, drift: Callable[[float], float]):
        self._drift = drift
        left = ttl - drift(ttl)
        self.mono = sent_at.mono + left
        self.wall = sent_at.wall + left
        self.confirmed_wall = answered_at.wall

    def confirm(self, sent_at: Instant, ttl: float, at: Instant) -> bool:
        """Takes in a renewal sent at sent_at and answered at `at` with ttl. False, changing nothing, when
        the deadline had already passed when the answer came."""
        if at.mono >= self.mono or at.wall >= self.wall:
            return False
        left = ttl - self._drift(ttl)
        self.mono = max(self.mono, sent_at.mono + left)
        self.wall = max(self.wall, sent_at.wall + left)
        self.confirmed_wall = at.wall
        return True

    def passed(self) -> bool:
        return time.monotonic() >= self.mono or time.time() >= self.wall

    def left(self) -> float:
        """Seconds left, by the clock that leaves the least; 0 or less once passed."""
        return min(self.mono - time.monotonic(), self.wall - time.time())

    @property
    def valid_until(self) -> datetime:
        return to_datetime(time.time() + self.left())

    @property
    def last_confirmed_at(self) -> datetime:
        return to_datetime(self.confirmed_wall)
