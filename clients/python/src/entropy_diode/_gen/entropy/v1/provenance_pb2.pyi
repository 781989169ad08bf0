from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
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

class Construction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSTRUCTION_UNSPECIFIED: _ClassVar[Construction]
    CONSTRUCTION_RAW: _ClassVar[Construction]
    CONSTRUCTION_DRBG: _ClassVar[Construction]
    CONSTRUCTION_DRBG_PREDICTION_RESISTANT: _ClassVar[Construction]

class DrbgMechanism(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DRBG_MECHANISM_UNSPECIFIED: _ClassVar[DrbgMechanism]
    DRBG_MECHANISM_CTR_DRBG_AES_256: _ClassVar[DrbgMechanism]
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
CONSTRUCTION_UNSPECIFIED: Construction
CONSTRUCTION_RAW: Construction
CONSTRUCTION_DRBG: Construction
CONSTRUCTION_DRBG_PREDICTION_RESISTANT: Construction
DRBG_MECHANISM_UNSPECIFIED: DrbgMechanism
DRBG_MECHANISM_CTR_DRBG_AES_256: DrbgMechanism

class DrbgLabel(_message.Message):
    __slots__ = ("mechanism", "security_strength_bits", "instance_id", "reseed_count", "bytes_since_reseed", "seed_bytes", "prediction_resistance")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    SECURITY_STRENGTH_BITS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RESEED_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_SINCE_RESEED_FIELD_NUMBER: _ClassVar[int]
    SEED_BYTES_FIELD_NUMBER: _ClassVar[int]
    PREDICTION_RESISTANCE_FIELD_NUMBER: _ClassVar[int]
    mechanism: DrbgMechanism
    security_strength_bits: int
    instance_id: str
    reseed_count: int
    bytes_since_reseed: int
    seed_bytes: int
    prediction_resistance: bool
    def __init__(self, mechanism: _Optional[_Union[DrbgMechanism, str]] = ..., security_strength_bits: _Optional[int] = ..., instance_id: _Optional[str] = ..., reseed_count: _Optional[int] = ..., bytes_since_reseed: _Optional[int] = ..., seed_bytes: _Optional[int] = ..., prediction_resistance: _Optional[bool] = ...) -> None: ...

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

class DrawProvenance(_message.Message):
    __slots__ = ("kinds", "mixed", "collector_ids", "first_chunk", "last_chunk", "chunk_count", "oldest_byte_age_ms", "construction", "drbg")
    KINDS_FIELD_NUMBER: _ClassVar[int]
    MIXED_FIELD_NUMBER: _ClassVar[int]
    COLLECTOR_IDS_FIELD_NUMBER: _ClassVar[int]
    FIRST_CHUNK_FIELD_NUMBER: _ClassVar[int]
    LAST_CHUNK_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    OLDEST_BYTE_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    DRBG_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedScalarFieldContainer[SourceKind]
    mixed: bool
    collector_ids: _containers.RepeatedScalarFieldContainer[str]
    first_chunk: ChunkRef
    last_chunk: ChunkRef
    chunk_count: int
    oldest_byte_age_ms: int
    construction: Construction
    drbg: DrbgLabel
    def __init__(self, kinds: _Optional[_Iterable[_Union[SourceKind, str]]] = ..., mixed: _Optional[bool] = ..., collector_ids: _Optional[_Iterable[str]] = ..., first_chunk: _Optional[_Union[ChunkRef, _Mapping]] = ..., last_chunk: _Optional[_Union[ChunkRef, _Mapping]] = ..., chunk_count: _Optional[int] = ..., oldest_byte_age_ms: _Optional[int] = ..., construction: _Optional[_Union[Construction, str]] = ..., drbg: _Optional[_Union[DrbgLabel, _Mapping]] = ...) -> None: ...

class ChunkRef(_message.Message):
    __slots__ = ("collector_id", "epoch", "sequence", "signed_at_unix_ms")
    COLLECTOR_ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SIGNED_AT_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    collector_id: str
    epoch: int
    sequence: int
    signed_at_unix_ms: int
    def __init__(self, collector_id: _Optional[str] = ..., epoch: _Optional[int] = ..., sequence: _Optional[int] = ..., signed_at_unix_ms: _Optional[int] = ...) -> None: ...
