from . import provenance_pb2 as _provenance_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Encoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENCODING_UNSPECIFIED: _ClassVar[Encoding]
    ENCODING_HEX: _ClassVar[Encoding]
    ENCODING_BASE64: _ClassVar[Encoding]
ENCODING_UNSPECIFIED: Encoding
ENCODING_HEX: Encoding
ENCODING_BASE64: Encoding

class GetRandomRequest(_message.Message):
    __slots__ = ("num_bytes", "encoding")
    NUM_BYTES_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    num_bytes: int
    encoding: Encoding
    def __init__(self, num_bytes: _Optional[int] = ..., encoding: _Optional[_Union[Encoding, str]] = ...) -> None: ...

class GetRandomResponse(_message.Message):
    __slots__ = ("data", "text")
    DATA_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    text: str
    def __init__(self, data: _Optional[bytes] = ..., text: _Optional[str] = ...) -> None: ...

class StreamRandomRequest(_message.Message):
    __slots__ = ("chunk_bytes", "total_bytes")
    CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    chunk_bytes: int
    total_bytes: int
    def __init__(self, chunk_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ...) -> None: ...

class StreamRandomResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class GetIntegersRequest(_message.Message):
    __slots__ = ("min", "max", "count")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    min: int
    max: int
    count: int
    def __init__(self, min: _Optional[int] = ..., max: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class GetIntegersResponse(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, values: _Optional[_Iterable[int]] = ...) -> None: ...

class GetFloatsRequest(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class GetFloatsResponse(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class GetUuidsRequest(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class GetUuidsResponse(_message.Message):
    __slots__ = ("uuids",)
    UUIDS_FIELD_NUMBER: _ClassVar[int]
    uuids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, uuids: _Optional[_Iterable[str]] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("pool_bytes", "pool_capacity_bytes", "pool_low_watermark_bytes", "waiters", "ingested_bytes_total", "served_bytes_total", "chunks_accepted_total", "chunks_rejected_total", "uptime_ms", "last_chunk_age_ms", "sources", "serving", "chunks_deferred_total", "not_serving_reason")
    POOL_BYTES_FIELD_NUMBER: _ClassVar[int]
    POOL_CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    POOL_LOW_WATERMARK_BYTES_FIELD_NUMBER: _ClassVar[int]
    WAITERS_FIELD_NUMBER: _ClassVar[int]
    INGESTED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SERVED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_ACCEPTED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_REJECTED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    UPTIME_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_CHUNK_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DEFERRED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    NOT_SERVING_REASON_FIELD_NUMBER: _ClassVar[int]
    pool_bytes: int
    pool_capacity_bytes: int
    pool_low_watermark_bytes: int
    waiters: int
    ingested_bytes_total: int
    served_bytes_total: int
    chunks_accepted_total: int
    chunks_rejected_total: int
    uptime_ms: int
    last_chunk_age_ms: int
    sources: _containers.RepeatedCompositeFieldContainer[SourceStatus]
    serving: bool
    chunks_deferred_total: int
    not_serving_reason: str
    def __init__(self, pool_bytes: _Optional[int] = ..., pool_capacity_bytes: _Optional[int] = ..., pool_low_watermark_bytes: _Optional[int] = ..., waiters: _Optional[int] = ..., ingested_bytes_total: _Optional[int] = ..., served_bytes_total: _Optional[int] = ..., chunks_accepted_total: _Optional[int] = ..., chunks_rejected_total: _Optional[int] = ..., uptime_ms: _Optional[int] = ..., last_chunk_age_ms: _Optional[int] = ..., sources: _Optional[_Iterable[_Union[SourceStatus, _Mapping]]] = ..., serving: _Optional[bool] = ..., chunks_deferred_total: _Optional[int] = ..., not_serving_reason: _Optional[str] = ...) -> None: ...

class SourceStatus(_message.Message):
    __slots__ = ("collector_id", "name", "kind", "health", "contributed_bytes_total", "last_report_age_ms", "last_mixing")
    COLLECTOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_REPORT_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_MIXING_FIELD_NUMBER: _ClassVar[int]
    collector_id: str
    name: str
    kind: _provenance_pb2.SourceKind
    health: _provenance_pb2.SourceHealth
    contributed_bytes_total: int
    last_report_age_ms: int
    last_mixing: _provenance_pb2.Mixing
    def __init__(self, collector_id: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[_Union[_provenance_pb2.SourceKind, str]] = ..., health: _Optional[_Union[_provenance_pb2.SourceHealth, str]] = ..., contributed_bytes_total: _Optional[int] = ..., last_report_age_ms: _Optional[int] = ..., last_mixing: _Optional[_Union[_provenance_pb2.Mixing, str]] = ...) -> None: ...
