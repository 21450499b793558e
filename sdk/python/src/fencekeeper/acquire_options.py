"""What an acquisition asks (AcquireOptions): one value taken by every call that acquires: Client.acquire,
lease, acquire_all, semaphore, campaign and lead, and those of fencekeeper.aio."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from fencekeeper.store import Value

DEFAULT_TTL = 10.0


@dataclass(frozen=True, kw_only=True)
class AcquireOptions:
    """The options of an acquisition. A field left None is left to the default of the call that takes the
    options: acquire()'s default is given with each field; semaphore() and campaign() wait in line unless
    wait is set (so an explicit wait=False is kept: it fails at once with ResourceHeldError), and a
    campaign takes a lease of its own unless own_lease is set.

    Every call that acquires takes one after its positional arguments, and its keyword arguments are these
    same fields, applied over it as dataclasses.replace() does; an unknown keyword is a TypeError:

        defaults = fencekeeper.AcquireOptions(ttl=5, holder="worker-7")
        client.acquire("orders", defaults, wait=True)   # replace(defaults, wait=True)
        client.acquire("orders", ttl=5, wait=True)      # the same fields, without a value to start from

    Times are in seconds. The server checks the values (INVALID_ARGUMENT), for every SDK alike."""

    ttl: float | None = None
    """The lease's TTL (etcd grants whole seconds, at least 2). Default 10. On a session, the session's
    TTL: acquisitions of one TTL share one."""
    wait: bool | float | None = None
    """False fails with ResourceHeldError when the resource is held; True waits in line; a number waits at
    most that many seconds (TimeoutError). Default False; semaphore() and campaign(): True."""
    holder: str | None = None
    """The holder's label, shown by describe and observe. Default the client's holder."""
    lock_delay: float | None = None
    """Seconds (whole, rounded up; 0: none) during which nobody is granted the resource if this lease
    expires rather than being released (docs/lock-delay.md); such a lease is always one of its own.
    Default none."""
    shared: bool | None = None
    """A shared acquisition (docs/shared-leases.md), held beside other shared ones while no exclusive one
    holds or waits; its token's shared is True and the fenced store refuses its writes. Default False."""
    value: Value | None = None
    """Published with the acquisition (docs/election.md), shown by describe and observe; lease.proclaim()
    changes it. A str goes as UTF-8. Default none."""
    max_holders: int | None = None
    """A permit of a counting semaphore of that many (semaphore(); implies shared). Every acquisition of
    the resource must name the same number while anyone holds or waits: another is a FencekeeperError with
    reason MAX_HOLDERS_MISMATCH. Default none: no cap."""
    preempt: bool | None = None
    """Take the resource from whoever holds it, at once, ahead of the waiters (docs/preemption.md); the old
    holder's writes are refused from then on, and its lease is lost ("preempted", a PreemptedError cause)
    at its next renewal. Needs the policy verb preempt (or admin); exclusive, on a lease of its own,
    without lock_delay; never waits. Default False."""
    own_lease: bool | None = None
    """On an etcd lease of its own rather than the client's session of that TTL (a client is on sessions
    unless made with sessions=False): for a TTL whose fate is its own, or a holder that must lose this lock
    without losing the others, or learn at its next renewal that it was released behind its back
    (docs/client.md, "Sessions"). lock_delay and preempt always take a lease of their own. Default False;
    campaign(): True."""

    def chosen(self) -> frozenset[str]:
        """The names of the fields the caller set (those not None)."""
        return frozenset(f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None)

    def with_defaults(self, **defaults: Any) -> AcquireOptions:
        """These options with each named field that was left None set to its given default, and the fields
        the caller set kept: how a call built on acquire() picks defaults of its own (semaphore() is
        acquire() with with_defaults(wait=True), so that an explicit wait=False still fails fast)."""
        _check_names("with_defaults", defaults)
        return dataclasses.replace(self, **{k: v for k, v in defaults.items() if getattr(self, k) is None})


_FIELDS = frozenset(f.name for f in dataclasses.fields(AcquireOptions))


def _check_names(call: str, fields: Mapping[str, Any]) -> None:
    for name in fields:
        if name not in _FIELDS:
            raise TypeError(f"{call}() got an unexpected keyword argument {name!r}: not a field of fencekeeper.AcquireOptions")


def _merged(call: str, options: AcquireOptions | None, fields: Mapping[str, Any]) -> AcquireOptions:
    """What a call acquires with: options (or all defaults) with its keyword fields applied over them."""
    if options is not None and not isinstance(options, AcquireOptions):
        raise TypeError(f"{call}() takes a fencekeeper.AcquireOptions as its options, got {type(options).__name__}")
    _check_names(call, fields)
    base = options if options is not None else AcquireOptions()
    return dataclasses.replace(base, **fields) if fields else base


# acquire()'s defaults, for the code that sends the options.


def _ttl(o: AcquireOptions) -> float:
    return DEFAULT_TTL if o.ttl is None else o.ttl


def _wait(o: AcquireOptions) -> bool | float:
    return False if o.wait is None else o.wait
