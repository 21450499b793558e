from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_REASON_UNSPECIFIED: _ClassVar[ErrorReason]
    STALE_TOKEN: _ClassVar[ErrorReason]
    LEASE_NOT_HELD: _ClassVar[ErrorReason]
    GENERATION_NOT_ISSUED: _ClassVar[ErrorReason]
    RESOURCE_HELD: _ClassVar[ErrorReason]
    LEASE_NOT_FOUND: _ClassVar[ErrorReason]
    IDEMPOTENCY_KEY_REUSED: _ClassVar[ErrorReason]
    ETCD_UNAVAILABLE: _ClassVar[ErrorReason]
    ALREADY_ACQUIRED: _ClassVar[ErrorReason]
    REVISION_COMPACTED: _ClassVar[ErrorReason]
    UNAUTHENTICATED: _ClassVar[ErrorReason]
    PERMISSION_DENIED: _ClassVar[ErrorReason]
    NOT_HOLDER: _ClassVar[ErrorReason]
    TOKEN_SIGNATURE_INVALID: _ClassVar[ErrorReason]
    LOCK_DELAY: _ClassVar[ErrorReason]
    SHARED_TOKEN: _ClassVar[ErrorReason]
    QUOTA_EXCEEDED: _ClassVar[ErrorReason]
    ETCD_NO_SPACE: _ClassVar[ErrorReason]
    BATCH_TOO_LARGE: _ClassVar[ErrorReason]
    MAX_HOLDERS_MISMATCH: _ClassVar[ErrorReason]
    PREEMPTED: _ClassVar[ErrorReason]
    LEASES_EXCEEDED: _ClassVar[ErrorReason]
    LEASE_BYTES_EXCEEDED: _ClassVar[ErrorReason]
    HISTORY_RATE_EXCEEDED: _ClassVar[ErrorReason]
    STREAMS_EXCEEDED: _ClassVar[ErrorReason]
    WAITERS_EXCEEDED: _ClassVar[ErrorReason]
    PREEMPTION_RATE_EXCEEDED: _ClassVar[ErrorReason]
ERROR_REASON_UNSPECIFIED: ErrorReason
STALE_TOKEN: ErrorReason
LEASE_NOT_HELD: ErrorReason
GENERATION_NOT_ISSUED: ErrorReason
RESOURCE_HELD: ErrorReason
LEASE_NOT_FOUND: ErrorReason
IDEMPOTENCY_KEY_REUSED: ErrorReason
ETCD_UNAVAILABLE: ErrorReason
ALREADY_ACQUIRED: ErrorReason
REVISION_COMPACTED: ErrorReason
UNAUTHENTICATED: ErrorReason
PERMISSION_DENIED: ErrorReason
NOT_HOLDER: ErrorReason
TOKEN_SIGNATURE_INVALID: ErrorReason
LOCK_DELAY: ErrorReason
SHARED_TOKEN: ErrorReason
QUOTA_EXCEEDED: ErrorReason
ETCD_NO_SPACE: ErrorReason
BATCH_TOO_LARGE: ErrorReason
MAX_HOLDERS_MISMATCH: ErrorReason
PREEMPTED: ErrorReason
LEASES_EXCEEDED: ErrorReason
LEASE_BYTES_EXCEEDED: ErrorReason
HISTORY_RATE_EXCEEDED: ErrorReason
STREAMS_EXCEEDED: ErrorReason
WAITERS_EXCEEDED: ErrorReason
PREEMPTION_RATE_EXCEEDED: ErrorReason
