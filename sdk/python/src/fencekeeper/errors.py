"""The errors the library raises, one class per thing a program may want to branch on. A server failure
carries the gRPC code, the google.rpc.ErrorInfo reason (proto/fencekeeper/v1/errors.proto) and its
metadata, decoded into typed fields; LeaseLostError is the client's own verdict on a lease."""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Literal, Mapping

import grpc

from fencekeeper.token import Token

LossCause = Literal["deadline", "not-found", "preempted", "fenced", "released", "canceled"]
"""Why a lease ended: no renewal confirmed before valid_until ("deadline"), the server says the lease is
gone ("not-found"), another acquisition preempted it ("preempted", the cause a PreemptedError), a write under its token was refused by the fence ("fenced"), release() or leaving
its scope ("released"), or the cancel event given to acquire() was set ("canceled")."""


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


class FencekeeperError(Exception):
    """Any failure the library reports. `code` is the gRPC status code, `reason` the ErrorInfo reason
    (e.g. "STALE_TOKEN", None when the server gave none), `metadata` the ErrorInfo metadata."""

    def __init__(
        self,
        message: str,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.metadata: Mapping[str, str] = dict(metadata or {})


class StaleTokenError(FencekeeperError):
    """STALE_TOKEN: a newer generation has written to the resource. The holder has lost it: stop."""

    @property
    def resource(self) -> str | None:
        return self.metadata.get("resource")

    @property
    def fence(self) -> int | None:
        """The resource's fence: the newer generation that has written."""
        return _int(self.metadata.get("fence"))

    @property
    def generation(self) -> int | None:
        """The refused generation."""
        return _int(self.metadata.get("generation"))


class LeaseNotHeldError(FencekeeperError):
    """LEASE_NOT_HELD (FENCE_MODE_LIVE): the token's lease is no longer held in etcd."""

    @property
    def resource(self) -> str | None:
        return self.metadata.get("resource")

    @property
    def generation(self) -> int | None:
        return _int(self.metadata.get("generation"))

    @property
    def lease_id(self) -> int | None:
        return _int(self.metadata.get("lease_id"))


class GenerationNotIssuedError(FencekeeperError):
    """GENERATION_NOT_ISSUED: the token names a generation never issued for the resource."""

    @property
    def generation(self) -> int | None:
        return _int(self.metadata.get("generation"))

    @property
    def last_issued(self) -> int | None:
        return _int(self.metadata.get("last_issued"))


class ResourceHeldError(FencekeeperError):
    """RESOURCE_HELD: an acquire without wait found the resource held."""

    holder_token: Token | None = None
    """The current holder's token."""

    @property
    def holder(self) -> str | None:
        """The current holder's label."""
        return self.metadata.get("holder")


class LockDelayError(ResourceHeldError):
    """LOCK_DELAY: an acquire without wait found the resource in a lock-delay (acquire(lock_delay=...),
    docs/lock-delay.md): its last holder's lease expired, and nobody is granted it before `until`. A
    ResourceHeldError with no holder."""

    @property
    def until(self) -> datetime | None:
        """About when the delay ends (the server's estimate, within about a second)."""
        value = self.metadata.get("lock_delay_until")
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if value else None

    @property
    def generation(self) -> int | None:
        """The generation whose lease expired."""
        return _int(self.metadata.get("generation"))


class LeaseNotFoundError(FencekeeperError):
    """LEASE_NOT_FOUND: the lease expired, was released, or never existed."""

    @property
    def lease_id(self) -> int | None:
        return _int(self.metadata.get("lease_id"))


class PreemptedError(FencekeeperError):
    """PREEMPTED: a renewal answered that another acquisition preempted the lease's holding
    (acquire(preempt=True), docs/preemption.md): its writes are refused since, and it is renewed no more.
    The __cause__ of the LeaseLostError of a lease lost this way (why "preempted")."""

    @property
    def resource(self) -> str | None:
        return self.metadata.get("resource")

    @property
    def generation(self) -> int | None:
        """The preempted generation."""
        return _int(self.metadata.get("generation"))

    @property
    def by_generation(self) -> int | None:
        """The preemptor's generation (0 if the answer came while it was being granted)."""
        return _int(self.metadata.get("by_generation"))

    @property
    def by_principal(self) -> str | None:
        """The preemptor's principal; empty without authentication."""
        return self.metadata.get("by_principal")


class IdempotencyKeyReusedError(FencekeeperError):
    """IDEMPOTENCY_KEY_REUSED: the key was used before with a different request."""

    @property
    def idempotency_key(self) -> str | None:
        return self.metadata.get("idempotency_key")


class UnavailableError(FencekeeperError):
    """UNAVAILABLE: no server answered, or etcd did not (ETCD_UNAVAILABLE). A write may or may not have
    applied: retry it with the same idempotency key."""


class TimeoutError(FencekeeperError, builtins.TimeoutError):
    """DEADLINE_EXCEEDED: e.g. an acquire that waited as long as it was allowed to."""


class InvalidArgumentError(FencekeeperError, ValueError):
    """INVALID_ARGUMENT: a malformed name, key, TTL or token."""


class CanceledError(FencekeeperError):
    """CANCELLED: the acquire was canceled (its cancel event was set), or the client is closed."""


class UnauthenticatedError(FencekeeperError):
    """UNAUTHENTICATED: the server wants credentials and got none, or bad ones; the message says which."""


class PermissionDeniedError(FencekeeperError):
    """PERMISSION_DENIED: the server's policy does not grant this (reason PERMISSION_DENIED), or the lease
    or token is another principal's (reason NOT_HOLDER)."""


class LeaseLostError(FencekeeperError):
    """The lease can no longer be assumed held: what check() and every call through the lease raise from
    then on. Do not retry with this token; acquire again for a new one."""

    def __init__(
        self,
        message: str,
        why: LossCause,
        token: Token,
        valid_until: datetime,
        last_confirmed_at: datetime,
        lost_at: datetime,
    ):
        super().__init__(message, grpc.StatusCode.FAILED_PRECONDITION)
        self.why: LossCause = why
        self.token = token
        self.valid_until = valid_until
        """The deadline the lease had when it ended."""
        self.last_confirmed_at = last_confirmed_at
        """When the last renewal was confirmed (or the Acquire answered)."""
        self.lost_at = lost_at
        """When the client decided the lease was lost."""
