from fencekeeper.v1 import token_pb2 as _token_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Mutation(_message.Message):
    __slots__ = ("token", "mode", "idempotency_key")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    token: _token_pb2.FencingToken
    mode: _token_pb2.FenceMode
    idempotency_key: str
    def __init__(self, token: _Optional[_Union[_token_pb2.FencingToken, _Mapping]] = ..., mode: _Optional[_Union[_token_pb2.FenceMode, str]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class Commit(_message.Message):
    __slots__ = ("revision", "fence", "replayed")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    revision: int
    fence: int
    replayed: bool
    def __init__(self, revision: _Optional[int] = ..., fence: _Optional[int] = ..., replayed: _Optional[bool] = ...) -> None: ...

class PutRequest(_message.Message):
    __slots__ = ("resource", "key", "value", "mutation")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MUTATION_FIELD_NUMBER: _ClassVar[int]
    resource: str
    key: str
    value: bytes
    mutation: Mutation
    def __init__(self, resource: _Optional[str] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., mutation: _Optional[_Union[Mutation, _Mapping]] = ...) -> None: ...

class PutResponse(_message.Message):
    __slots__ = ("commit",)
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    commit: Commit
    def __init__(self, commit: _Optional[_Union[Commit, _Mapping]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("resource", "key")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    resource: str
    key: str
    def __init__(self, resource: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("found", "value", "mod_revision", "fence")
    FOUND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MOD_REVISION_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    found: bool
    value: bytes
    mod_revision: int
    fence: int
    def __init__(self, found: _Optional[bool] = ..., value: _Optional[bytes] = ..., mod_revision: _Optional[int] = ..., fence: _Optional[int] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("resource", "key", "mutation")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MUTATION_FIELD_NUMBER: _ClassVar[int]
    resource: str
    key: str
    mutation: Mutation
    def __init__(self, resource: _Optional[str] = ..., key: _Optional[str] = ..., mutation: _Optional[_Union[Mutation, _Mapping]] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("commit",)
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    commit: Commit
    def __init__(self, commit: _Optional[_Union[Commit, _Mapping]] = ...) -> None: ...

class TxnOp(_message.Message):
    __slots__ = ("put", "delete")
    PUT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    put: TxnPut
    delete: TxnDelete
    def __init__(self, put: _Optional[_Union[TxnPut, _Mapping]] = ..., delete: _Optional[_Union[TxnDelete, _Mapping]] = ...) -> None: ...

class TxnPut(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class TxnDelete(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: str
    def __init__(self, key: _Optional[str] = ...) -> None: ...

class TxnRequest(_message.Message):
    __slots__ = ("resource", "ops", "mutation")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    MUTATION_FIELD_NUMBER: _ClassVar[int]
    resource: str
    ops: _containers.RepeatedCompositeFieldContainer[TxnOp]
    mutation: Mutation
    def __init__(self, resource: _Optional[str] = ..., ops: _Optional[_Iterable[_Union[TxnOp, _Mapping]]] = ..., mutation: _Optional[_Union[Mutation, _Mapping]] = ...) -> None: ...

class TxnResponse(_message.Message):
    __slots__ = ("commit",)
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    commit: Commit
    def __init__(self, commit: _Optional[_Union[Commit, _Mapping]] = ...) -> None: ...

class RangeRequest(_message.Message):
    __slots__ = ("resource", "prefix", "page_size", "page_token", "keys_only")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    KEYS_ONLY_FIELD_NUMBER: _ClassVar[int]
    resource: str
    prefix: str
    page_size: int
    page_token: str
    keys_only: bool
    def __init__(self, resource: _Optional[str] = ..., prefix: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., keys_only: _Optional[bool] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ("key", "value", "mod_revision")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MOD_REVISION_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    mod_revision: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., mod_revision: _Optional[int] = ...) -> None: ...

class RangeResponse(_message.Message):
    __slots__ = ("entries", "next_page_token", "revision")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    next_page_token: str
    revision: int
    def __init__(self, entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class GetFenceRequest(_message.Message):
    __slots__ = ("resource",)
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    def __init__(self, resource: _Optional[str] = ...) -> None: ...

class GetFenceResponse(_message.Message):
    __slots__ = ("fence", "last_issued")
    FENCE_FIELD_NUMBER: _ClassVar[int]
    LAST_ISSUED_FIELD_NUMBER: _ClassVar[int]
    fence: int
    last_issued: int
    def __init__(self, fence: _Optional[int] = ..., last_issued: _Optional[int] = ...) -> None: ...

class BatchWrite(_message.Message):
    __slots__ = ("put", "delete")
    PUT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    put: PutRequest
    delete: DeleteRequest
    def __init__(self, put: _Optional[_Union[PutRequest, _Mapping]] = ..., delete: _Optional[_Union[DeleteRequest, _Mapping]] = ...) -> None: ...

class BatchRequest(_message.Message):
    __slots__ = ("writes",)
    WRITES_FIELD_NUMBER: _ClassVar[int]
    writes: _containers.RepeatedCompositeFieldContainer[BatchWrite]
    def __init__(self, writes: _Optional[_Iterable[_Union[BatchWrite, _Mapping]]] = ...) -> None: ...

class BatchResult(_message.Message):
    __slots__ = ("commit", "error")
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    commit: Commit
    error: _status_pb2.Status
    def __init__(self, commit: _Optional[_Union[Commit, _Mapping]] = ..., error: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class BatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[BatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[BatchResult, _Mapping]]] = ...) -> None: ...
