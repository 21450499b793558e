import datetime

from fencekeeper.v1 import token_pb2 as _token_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AcquireRequest(_message.Message):
    __slots__ = ("resource", "ttl", "holder", "wait", "wait_timeout", "session_id", "lock_delay", "mode", "value", "max_holders", "preempt")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MAX_HOLDERS_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_FIELD_NUMBER: _ClassVar[int]
    resource: str
    ttl: _duration_pb2.Duration
    holder: str
    wait: bool
    wait_timeout: _duration_pb2.Duration
    session_id: int
    lock_delay: _duration_pb2.Duration
    mode: _token_pb2.AcquireMode
    value: bytes
    max_holders: int
    preempt: bool
    def __init__(self, resource: _Optional[str] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., holder: _Optional[str] = ..., wait: _Optional[bool] = ..., wait_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., session_id: _Optional[int] = ..., lock_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., mode: _Optional[_Union[_token_pb2.AcquireMode, str]] = ..., value: _Optional[bytes] = ..., max_holders: _Optional[int] = ..., preempt: _Optional[bool] = ...) -> None: ...

class AcquireResponse(_message.Message):
    __slots__ = ("token", "ttl", "lock_delay")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_FIELD_NUMBER: _ClassVar[int]
    token: _token_pb2.FencingToken
    ttl: _duration_pb2.Duration
    lock_delay: _duration_pb2.Duration
    def __init__(self, token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lock_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class KeepAliveRequest(_message.Message):
    __slots__ = ("lease_id", "lease_ids")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_IDS_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    lease_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, lease_id: _Optional[int] = ..., lease_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class KeepAliveResponse(_message.Message):
    __slots__ = ("lease_id", "ttl", "error", "renewals")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RENEWALS_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    ttl: _duration_pb2.Duration
    error: _status_pb2.Status
    renewals: _containers.RepeatedCompositeFieldContainer[LeaseRenewal]
    def __init__(self, lease_id: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., renewals: _Optional[_Iterable[_Union[LeaseRenewal, _Mapping]]] = ...) -> None: ...

class LeaseRenewal(_message.Message):
    __slots__ = ("lease_id", "ttl", "error")
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    ttl: _duration_pb2.Duration
    error: _status_pb2.Status
    def __init__(self, lease_id: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class RenewRequest(_message.Message):
    __slots__ = ("lease_id",)
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    lease_id: int
    def __init__(self, lease_id: _Optional[int] = ...) -> None: ...

class RenewResponse(_message.Message):
    __slots__ = ("ttl",)
    TTL_FIELD_NUMBER: _ClassVar[int]
    ttl: _duration_pb2.Duration
    def __init__(self, ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: _token_pb2.FencingToken
    def __init__(self, token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ("resource", "holders_page_token")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    resource: str
    holders_page_token: str
    def __init__(self, resource: _Optional[str] = ..., holders_page_token: _Optional[str] = ...) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("held", "holder", "token", "ttl", "waiters", "fence", "last_issued", "holder_principal", "lock_delay", "lock_delay_until", "holders", "holders_without_ttl", "value", "max_holders", "next_holders_page_token")
    HELD_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    WAITERS_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    LAST_ISSUED_FIELD_NUMBER: _ClassVar[int]
    HOLDER_PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_UNTIL_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_WITHOUT_TTL_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MAX_HOLDERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_HOLDERS_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    held: bool
    holder: str
    token: _token_pb2.FencingToken
    ttl: _duration_pb2.Duration
    waiters: int
    fence: int
    last_issued: int
    holder_principal: str
    lock_delay: _duration_pb2.Duration
    lock_delay_until: _timestamp_pb2.Timestamp
    holders: _containers.RepeatedCompositeFieldContainer[Holder]
    holders_without_ttl: int
    value: bytes
    max_holders: int
    next_holders_page_token: str
    def __init__(self, held: _Optional[bool] = ..., holder: _Optional[str] = ..., token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., waiters: _Optional[int] = ..., fence: _Optional[int] = ..., last_issued: _Optional[int] = ..., holder_principal: _Optional[str] = ..., lock_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lock_delay_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., holders: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., holders_without_ttl: _Optional[int] = ..., value: _Optional[bytes] = ..., max_holders: _Optional[int] = ..., next_holders_page_token: _Optional[str] = ...) -> None: ...

class ListResourcesRequest(_message.Message):
    __slots__ = ("prefix", "page_size", "page_token")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    page_size: int
    page_token: str
    def __init__(self, prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListResourcesResponse(_message.Message):
    __slots__ = ("resources", "next_page_token")
    class Resource(_message.Message):
        __slots__ = ("resource", "state")
        RESOURCE_FIELD_NUMBER: _ClassVar[int]
        STATE_FIELD_NUMBER: _ClassVar[int]
        resource: str
        state: DescribeResponse
        def __init__(self, resource: _Optional[str] = ..., state: _Optional[_Union[DescribeResponse, _Mapping]] = ...) -> None: ...
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ListResourcesResponse.Resource]
    next_page_token: str
    def __init__(self, resources: _Optional[_Iterable[_Union[ListResourcesResponse.Resource, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Holder(_message.Message):
    __slots__ = ("holder", "token", "ttl", "holder_principal", "value", "value_left_out")
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    HOLDER_PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUE_LEFT_OUT_FIELD_NUMBER: _ClassVar[int]
    holder: str
    token: _token_pb2.FencingToken
    ttl: _duration_pb2.Duration
    holder_principal: str
    value: bytes
    value_left_out: bool
    def __init__(self, holder: _Optional[str] = ..., token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., holder_principal: _Optional[str] = ..., value: _Optional[bytes] = ..., value_left_out: _Optional[bool] = ...) -> None: ...

class ObserveRequest(_message.Message):
    __slots__ = ("resource",)
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    def __init__(self, resource: _Optional[str] = ...) -> None: ...

class ObserveResponse(_message.Message):
    __slots__ = ("held", "holder", "token", "revision", "holder_principal", "lock_delay", "lock_delay_until", "holders", "joined", "left", "value", "max_holders", "missed_changes")
    HELD_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    HOLDER_PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_FIELD_NUMBER: _ClassVar[int]
    LOCK_DELAY_UNTIL_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    JOINED_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MAX_HOLDERS_FIELD_NUMBER: _ClassVar[int]
    MISSED_CHANGES_FIELD_NUMBER: _ClassVar[int]
    held: bool
    holder: str
    token: _token_pb2.FencingToken
    revision: int
    holder_principal: str
    lock_delay: _duration_pb2.Duration
    lock_delay_until: _timestamp_pb2.Timestamp
    holders: _containers.RepeatedCompositeFieldContainer[Holder]
    joined: _containers.RepeatedCompositeFieldContainer[Holder]
    left: _containers.RepeatedCompositeFieldContainer[Holder]
    value: bytes
    max_holders: int
    missed_changes: bool
    def __init__(self, held: _Optional[bool] = ..., holder: _Optional[str] = ..., token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., revision: _Optional[int] = ..., holder_principal: _Optional[str] = ..., lock_delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lock_delay_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., holders: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., joined: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., left: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., value: _Optional[bytes] = ..., max_holders: _Optional[int] = ..., missed_changes: _Optional[bool] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("ttl", "holder")
    TTL_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    ttl: _duration_pb2.Duration
    holder: str
    def __init__(self, ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., holder: _Optional[str] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ("session_id", "ttl")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    ttl: _duration_pb2.Duration
    def __init__(self, session_id: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    def __init__(self, session_id: _Optional[int] = ...) -> None: ...

class CloseSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTokenKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTokenKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[TokenKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[TokenKey, _Mapping]]] = ...) -> None: ...

class TokenKey(_message.Message):
    __slots__ = ("key_id", "algorithm", "public_key")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    algorithm: str
    public_key: bytes
    def __init__(self, key_id: _Optional[str] = ..., algorithm: _Optional[str] = ..., public_key: _Optional[bytes] = ...) -> None: ...

class ProclaimRequest(_message.Message):
    __slots__ = ("token", "value")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    token: _token_pb2.FencingToken
    value: bytes
    def __init__(self, token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., value: _Optional[bytes] = ...) -> None: ...

class ProclaimResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class LiftLockDelayRequest(_message.Message):
    __slots__ = ("resource",)
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    def __init__(self, resource: _Optional[str] = ...) -> None: ...

class LiftLockDelayResponse(_message.Message):
    __slots__ = ("lifted", "generation")
    LIFTED_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    lifted: bool
    generation: int
    def __init__(self, lifted: _Optional[bool] = ..., generation: _Optional[int] = ...) -> None: ...

class LeaseBatchOp(_message.Message):
    __slots__ = ("acquire", "release")
    ACQUIRE_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    acquire: AcquireRequest
    release: ReleaseRequest
    def __init__(self, acquire: _Optional[_Union[AcquireRequest, _Mapping]] = ..., release: _Optional[_Union[ReleaseRequest, _Mapping]] = ...) -> None: ...

class LeaseBatchRequest(_message.Message):
    __slots__ = ("ops",)
    OPS_FIELD_NUMBER: _ClassVar[int]
    ops: _containers.RepeatedCompositeFieldContainer[LeaseBatchOp]
    def __init__(self, ops: _Optional[_Iterable[_Union[LeaseBatchOp, _Mapping]]] = ...) -> None: ...

class LeaseBatchResult(_message.Message):
    __slots__ = ("acquired", "released", "error")
    ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    acquired: AcquireResponse
    released: ReleaseResponse
    error: _status_pb2.Status
    def __init__(self, acquired: _Optional[_Union[AcquireResponse, _Mapping]] = ..., released: _Optional[_Union[ReleaseResponse, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class LeaseBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[LeaseBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[LeaseBatchResult, _Mapping]]] = ...) -> None: ...

class AcquireAllRequest(_message.Message):
    __slots__ = ("resources", "ttl", "holder", "wait", "wait_timeout", "session_id")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedScalarFieldContainer[str]
    ttl: _duration_pb2.Duration
    holder: str
    wait: bool
    wait_timeout: _duration_pb2.Duration
    session_id: int
    def __init__(self, resources: _Optional[_Iterable[str]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., holder: _Optional[str] = ..., wait: _Optional[bool] = ..., wait_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., session_id: _Optional[int] = ...) -> None: ...

class AcquireAllResponse(_message.Message):
    __slots__ = ("acquisitions",)
    ACQUISITIONS_FIELD_NUMBER: _ClassVar[int]
    acquisitions: _containers.RepeatedCompositeFieldContainer[AcquireResponse]
    def __init__(self, acquisitions: _Optional[_Iterable[_Union[AcquireResponse, _Mapping]]] = ...) -> None: ...
