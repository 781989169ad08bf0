from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SourceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_KIND_UNSPECIFIED: _ClassVar[SourceKind]
    SOURCE_KIND_QUANTUM: _ClassVar[SourceKind]
    SOURCE_KIND_HARDWARE: _ClassVar[SourceKind]
    SOURCE_KIND_OS: _ClassVar[SourceKind]

class SourceHealth(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_HEALTH_UNSPECIFIED: _ClassVar[SourceHealth]
    SOURCE_HEALTH_HEALTHY: _ClassVar[SourceHealth]
    SOURCE_HEALTH_STARTING: _ClassVar[SourceHealth]
    SOURCE_HEALTH_QUARANTINED: _ClassVar[SourceHealth]
    SOURCE_HEALTH_UNREACHABLE: _ClassVar[SourceHealth]

class Mixing(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MIXING_UNSPECIFIED: _ClassVar[Mixing]
    MIXING_NONE: _ClassVar[Mixing]
    MIXING_XOR: _ClassVar[Mixing]
    MIXING_HKDF_SHA256: _ClassVar[Mixing]
SOURCE_KIND_UNSPECIFIED: SourceKind
SOURCE_KIND_QUANTUM: SourceKind
SOURCE_KIND_HARDWARE: SourceKind
SOURCE_KIND_OS: SourceKind
SOURCE_HEALTH_UNSPECIFIED: SourceHealth
SOURCE_HEALTH_HEALTHY: SourceHealth
SOURCE_HEALTH_STARTING: SourceHealth
SOURCE_HEALTH_QUARANTINED: SourceHealth
SOURCE_HEALTH_UNREACHABLE: SourceHealth
MIXING_UNSPECIFIED: Mixing
MIXING_NONE: Mixing
MIXING_XOR: Mixing
MIXING_HKDF_SHA256: Mixing

class SourceReport(_message.Message):
    __slots__ = ("name", "kind", "health", "contributed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTED_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: SourceKind
    health: SourceHealth
    contributed: bool
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[SourceKind, str]] = ..., health: _Optional[_Union[SourceHealth, str]] = ..., contributed: _Optional[bool] = ...) -> None: ...
