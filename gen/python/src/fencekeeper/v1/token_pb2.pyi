from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AcquireMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACQUIRE_MODE_UNSPECIFIED: _ClassVar[AcquireMode]
    ACQUIRE_MODE_EXCLUSIVE: _ClassVar[AcquireMode]
    ACQUIRE_MODE_SHARED: _ClassVar[AcquireMode]

class FenceMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FENCE_MODE_UNSPECIFIED: _ClassVar[FenceMode]
    FENCE_MODE_ORDER: _ClassVar[FenceMode]
    FENCE_MODE_LIVE: _ClassVar[FenceMode]
ACQUIRE_MODE_UNSPECIFIED: AcquireMode
ACQUIRE_MODE_EXCLUSIVE: AcquireMode
ACQUIRE_MODE_SHARED: AcquireMode
FENCE_MODE_UNSPECIFIED: FenceMode
FENCE_MODE_ORDER: FenceMode
FENCE_MODE_LIVE: FenceMode

class FencingToken(_message.Message):
    __slots__ = ("resource", "generation", "lease_id", "principal", "key_id", "signature", "mode")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    resource: str
    generation: int
    lease_id: int
    principal: str
    key_id: str
    signature: bytes
    mode: AcquireMode
    def __init__(self, resource: _Optional[str] = ..., generation: _Optional[int] = ..., lease_id: _Optional[int] = ..., principal: _Optional[str] = ..., key_id: _Optional[str] = ..., signature: _Optional[bytes] = ..., mode: _Optional[_Union[AcquireMode, str]] = ...) -> None: ...
