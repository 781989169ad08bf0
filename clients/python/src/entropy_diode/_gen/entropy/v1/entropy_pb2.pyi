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
    __slots__ = ("num_bytes", "encoding", "accept_kinds", "construction", "receipt")
    NUM_BYTES_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    num_bytes: int
    encoding: Encoding
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    receipt: bool
    def __init__(self, num_bytes: _Optional[int] = ..., encoding: _Optional[_Union[Encoding, str]] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ..., receipt: _Optional[bool] = ...) -> None: ...

class GetRandomResponse(_message.Message):
    __slots__ = ("data", "text", "provenance", "receipt")
    DATA_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    text: str
    provenance: _provenance_pb2.DrawProvenance
    receipt: DrawReceipt
    def __init__(self, data: _Optional[bytes] = ..., text: _Optional[str] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ..., receipt: _Optional[_Union[DrawReceipt, _Mapping]] = ...) -> None: ...

class StreamRandomRequest(_message.Message):
    __slots__ = ("chunk_bytes", "total_bytes", "accept_kinds", "construction", "receipt")
    CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    chunk_bytes: int
    total_bytes: int
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    receipt: bool
    def __init__(self, chunk_bytes: _Optional[int] = ..., total_bytes: _Optional[int] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ..., receipt: _Optional[bool] = ...) -> None: ...

class StreamRandomResponse(_message.Message):
    __slots__ = ("data", "provenance")
    DATA_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    provenance: _provenance_pb2.DrawProvenance
    def __init__(self, data: _Optional[bytes] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ...) -> None: ...

class GetIntegersRequest(_message.Message):
    __slots__ = ("min", "max", "count", "accept_kinds", "construction", "receipt")
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    min: int
    max: int
    count: int
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    receipt: bool
    def __init__(self, min: _Optional[int] = ..., max: _Optional[int] = ..., count: _Optional[int] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ..., receipt: _Optional[bool] = ...) -> None: ...

class GetIntegersResponse(_message.Message):
    __slots__ = ("values", "provenance", "receipt")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[int]
    provenance: _provenance_pb2.DrawProvenance
    receipt: DrawReceipt
    def __init__(self, values: _Optional[_Iterable[int]] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ..., receipt: _Optional[_Union[DrawReceipt, _Mapping]] = ...) -> None: ...

class GetFloatsRequest(_message.Message):
    __slots__ = ("count", "accept_kinds", "construction", "receipt")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    count: int
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    receipt: bool
    def __init__(self, count: _Optional[int] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ..., receipt: _Optional[bool] = ...) -> None: ...

class GetFloatsResponse(_message.Message):
    __slots__ = ("values", "provenance", "receipt")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    provenance: _provenance_pb2.DrawProvenance
    receipt: DrawReceipt
    def __init__(self, values: _Optional[_Iterable[float]] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ..., receipt: _Optional[_Union[DrawReceipt, _Mapping]] = ...) -> None: ...

class GetUuidsRequest(_message.Message):
    __slots__ = ("count", "accept_kinds", "construction", "receipt")
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    count: int
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    receipt: bool
    def __init__(self, count: _Optional[int] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ..., receipt: _Optional[bool] = ...) -> None: ...

class GetUuidsResponse(_message.Message):
    __slots__ = ("uuids", "provenance", "receipt")
    UUIDS_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_FIELD_NUMBER: _ClassVar[int]
    uuids: _containers.RepeatedScalarFieldContainer[str]
    provenance: _provenance_pb2.DrawProvenance
    receipt: DrawReceipt
    def __init__(self, uuids: _Optional[_Iterable[str]] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ..., receipt: _Optional[_Union[DrawReceipt, _Mapping]] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("pool_bytes", "pool_capacity_bytes", "pool_low_watermark_bytes", "waiters", "ingested_bytes_total", "served_bytes_total", "chunks_accepted_total", "chunks_rejected_total", "uptime_ms", "last_chunk_age_ms", "sources", "serving", "chunks_deferred_total", "not_serving_reason", "pool_by_class", "expired_bytes_total", "max_byte_age_ms", "evicted_bytes_total", "discarded_bytes_total", "quality_tested_bytes_total", "drbg_served_bytes_total", "drbg_seed_bytes_total")
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
    POOL_BY_CLASS_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTE_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    EVICTED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DISCARDED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    QUALITY_TESTED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DRBG_SERVED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DRBG_SEED_BYTES_TOTAL_FIELD_NUMBER: _ClassVar[int]
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
    pool_by_class: _containers.RepeatedCompositeFieldContainer[ClassLevel]
    expired_bytes_total: int
    max_byte_age_ms: int
    evicted_bytes_total: int
    discarded_bytes_total: int
    quality_tested_bytes_total: int
    drbg_served_bytes_total: int
    drbg_seed_bytes_total: int
    def __init__(self, pool_bytes: _Optional[int] = ..., pool_capacity_bytes: _Optional[int] = ..., pool_low_watermark_bytes: _Optional[int] = ..., waiters: _Optional[int] = ..., ingested_bytes_total: _Optional[int] = ..., served_bytes_total: _Optional[int] = ..., chunks_accepted_total: _Optional[int] = ..., chunks_rejected_total: _Optional[int] = ..., uptime_ms: _Optional[int] = ..., last_chunk_age_ms: _Optional[int] = ..., sources: _Optional[_Iterable[_Union[SourceStatus, _Mapping]]] = ..., serving: _Optional[bool] = ..., chunks_deferred_total: _Optional[int] = ..., not_serving_reason: _Optional[str] = ..., pool_by_class: _Optional[_Iterable[_Union[ClassLevel, _Mapping]]] = ..., expired_bytes_total: _Optional[int] = ..., max_byte_age_ms: _Optional[int] = ..., evicted_bytes_total: _Optional[int] = ..., discarded_bytes_total: _Optional[int] = ..., quality_tested_bytes_total: _Optional[int] = ..., drbg_served_bytes_total: _Optional[int] = ..., drbg_seed_bytes_total: _Optional[int] = ...) -> None: ...

class ClassLevel(_message.Message):
    __slots__ = ("kinds", "bytes")
    KINDS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    bytes: int
    def __init__(self, kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., bytes: _Optional[int] = ...) -> None: ...

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

class CheckQualityRequest(_message.Message):
    __slots__ = ("sample_bytes", "accept_kinds", "construction")
    SAMPLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_KINDS_FIELD_NUMBER: _ClassVar[int]
    CONSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    sample_bytes: int
    accept_kinds: _containers.RepeatedScalarFieldContainer[_provenance_pb2.SourceKind]
    construction: _provenance_pb2.Construction
    def __init__(self, sample_bytes: _Optional[int] = ..., accept_kinds: _Optional[_Iterable[_Union[_provenance_pb2.SourceKind, str]]] = ..., construction: _Optional[_Union[_provenance_pb2.Construction, str]] = ...) -> None: ...

class CheckQualityResponse(_message.Message):
    __slots__ = ("sample_bytes", "provenance", "shannon_entropy_bits_per_byte", "min_entropy_bits_per_byte", "chi_square", "chi_square_p_value", "mean", "serial_correlation", "pi", "pi_os_reference", "fips140_2", "passed", "failures", "thresholds")
    SAMPLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    SHANNON_ENTROPY_BITS_PER_BYTE_FIELD_NUMBER: _ClassVar[int]
    MIN_ENTROPY_BITS_PER_BYTE_FIELD_NUMBER: _ClassVar[int]
    CHI_SQUARE_FIELD_NUMBER: _ClassVar[int]
    CHI_SQUARE_P_VALUE_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    SERIAL_CORRELATION_FIELD_NUMBER: _ClassVar[int]
    PI_FIELD_NUMBER: _ClassVar[int]
    PI_OS_REFERENCE_FIELD_NUMBER: _ClassVar[int]
    FIPS140_2_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    THRESHOLDS_FIELD_NUMBER: _ClassVar[int]
    sample_bytes: int
    provenance: _provenance_pb2.DrawProvenance
    shannon_entropy_bits_per_byte: float
    min_entropy_bits_per_byte: float
    chi_square: float
    chi_square_p_value: float
    mean: float
    serial_correlation: float
    pi: MonteCarloPi
    pi_os_reference: MonteCarloPi
    fips140_2: Fips1402
    passed: bool
    failures: _containers.RepeatedScalarFieldContainer[str]
    thresholds: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, sample_bytes: _Optional[int] = ..., provenance: _Optional[_Union[_provenance_pb2.DrawProvenance, _Mapping]] = ..., shannon_entropy_bits_per_byte: _Optional[float] = ..., min_entropy_bits_per_byte: _Optional[float] = ..., chi_square: _Optional[float] = ..., chi_square_p_value: _Optional[float] = ..., mean: _Optional[float] = ..., serial_correlation: _Optional[float] = ..., pi: _Optional[_Union[MonteCarloPi, _Mapping]] = ..., pi_os_reference: _Optional[_Union[MonteCarloPi, _Mapping]] = ..., fips140_2: _Optional[_Union[Fips1402, _Mapping]] = ..., passed: _Optional[bool] = ..., failures: _Optional[_Iterable[str]] = ..., thresholds: _Optional[_Iterable[str]] = ...) -> None: ...

class MonteCarloPi(_message.Message):
    __slots__ = ("estimate", "error", "standard_error", "points")
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STANDARD_ERROR_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    estimate: float
    error: float
    standard_error: float
    points: int
    def __init__(self, estimate: _Optional[float] = ..., error: _Optional[float] = ..., standard_error: _Optional[float] = ..., points: _Optional[int] = ...) -> None: ...

class Fips1402(_message.Message):
    __slots__ = ("blocks", "monobit_failures", "poker_failures", "runs_failures", "long_run_failures", "blocks_failed")
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    MONOBIT_FAILURES_FIELD_NUMBER: _ClassVar[int]
    POKER_FAILURES_FIELD_NUMBER: _ClassVar[int]
    RUNS_FAILURES_FIELD_NUMBER: _ClassVar[int]
    LONG_RUN_FAILURES_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FAILED_FIELD_NUMBER: _ClassVar[int]
    blocks: int
    monobit_failures: int
    poker_failures: int
    runs_failures: int
    long_run_failures: int
    blocks_failed: int
    def __init__(self, blocks: _Optional[int] = ..., monobit_failures: _Optional[int] = ..., poker_failures: _Optional[int] = ..., runs_failures: _Optional[int] = ..., long_run_failures: _Optional[int] = ..., blocks_failed: _Optional[int] = ...) -> None: ...

class GetUsageRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetUsageResponse(_message.Message):
    __slots__ = ("key_name", "requests", "bytes", "drbg_bytes", "streams", "undelivered_bytes")
    KEY_NAME_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    DRBG_BYTES_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    UNDELIVERED_BYTES_FIELD_NUMBER: _ClassVar[int]
    key_name: str
    requests: RateUsage
    bytes: RateUsage
    drbg_bytes: RateUsage
    streams: HeldUsage
    undelivered_bytes: HeldUsage
    def __init__(self, key_name: _Optional[str] = ..., requests: _Optional[_Union[RateUsage, _Mapping]] = ..., bytes: _Optional[_Union[RateUsage, _Mapping]] = ..., drbg_bytes: _Optional[_Union[RateUsage, _Mapping]] = ..., streams: _Optional[_Union[HeldUsage, _Mapping]] = ..., undelivered_bytes: _Optional[_Union[HeldUsage, _Mapping]] = ...) -> None: ...

class RateUsage(_message.Message):
    __slots__ = ("unlimited", "per_second", "burst", "remaining", "next_refill_ms", "full_in_ms")
    UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    NEXT_REFILL_MS_FIELD_NUMBER: _ClassVar[int]
    FULL_IN_MS_FIELD_NUMBER: _ClassVar[int]
    unlimited: bool
    per_second: int
    burst: int
    remaining: int
    next_refill_ms: int
    full_in_ms: int
    def __init__(self, unlimited: _Optional[bool] = ..., per_second: _Optional[int] = ..., burst: _Optional[int] = ..., remaining: _Optional[int] = ..., next_refill_ms: _Optional[int] = ..., full_in_ms: _Optional[int] = ...) -> None: ...

class HeldUsage(_message.Message):
    __slots__ = ("unlimited", "limit", "in_use", "remaining")
    UNLIMITED_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    IN_USE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    unlimited: bool
    limit: int
    in_use: int
    remaining: int
    def __init__(self, unlimited: _Optional[bool] = ..., limit: _Optional[int] = ..., in_use: _Optional[int] = ..., remaining: _Optional[int] = ...) -> None: ...

class DrawReceipt(_message.Message):
    __slots__ = ("signed_receipt", "salt", "serial")
    SIGNED_RECEIPT_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    signed_receipt: bytes
    salt: bytes
    serial: int
    def __init__(self, signed_receipt: _Optional[bytes] = ..., salt: _Optional[bytes] = ..., serial: _Optional[int] = ...) -> None: ...

class GetPublicKeyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPublicKeyResponse(_message.Message):
    __slots__ = ("public_key", "key_id", "gateway_id")
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    GATEWAY_ID_FIELD_NUMBER: _ClassVar[int]
    public_key: bytes
    key_id: bytes
    gateway_id: str
    def __init__(self, public_key: _Optional[bytes] = ..., key_id: _Optional[bytes] = ..., gateway_id: _Optional[str] = ...) -> None: ...

class GetSignedTreeHeadRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSignedTreeHeadResponse(_message.Message):
    __slots__ = ("signed_tree_head", "tree_size")
    SIGNED_TREE_HEAD_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    signed_tree_head: bytes
    tree_size: int
    def __init__(self, signed_tree_head: _Optional[bytes] = ..., tree_size: _Optional[int] = ...) -> None: ...

class GetInclusionProofRequest(_message.Message):
    __slots__ = ("serial", "tree_size")
    SERIAL_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    serial: int
    tree_size: int
    def __init__(self, serial: _Optional[int] = ..., tree_size: _Optional[int] = ...) -> None: ...

class GetInclusionProofResponse(_message.Message):
    __slots__ = ("hashes",)
    HASHES_FIELD_NUMBER: _ClassVar[int]
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, hashes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class GetConsistencyProofRequest(_message.Message):
    __slots__ = ("old_size", "new_size")
    OLD_SIZE_FIELD_NUMBER: _ClassVar[int]
    NEW_SIZE_FIELD_NUMBER: _ClassVar[int]
    old_size: int
    new_size: int
    def __init__(self, old_size: _Optional[int] = ..., new_size: _Optional[int] = ...) -> None: ...

class GetConsistencyProofResponse(_message.Message):
    __slots__ = ("hashes",)
    HASHES_FIELD_NUMBER: _ClassVar[int]
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, hashes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ListReceiptsRequest(_message.Message):
    __slots__ = ("start_serial", "max_receipts")
    START_SERIAL_FIELD_NUMBER: _ClassVar[int]
    MAX_RECEIPTS_FIELD_NUMBER: _ClassVar[int]
    start_serial: int
    max_receipts: int
    def __init__(self, start_serial: _Optional[int] = ..., max_receipts: _Optional[int] = ...) -> None: ...

class ListReceiptsResponse(_message.Message):
    __slots__ = ("signed_receipts", "next_serial", "tree_size")
    SIGNED_RECEIPTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_SERIAL_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    signed_receipts: _containers.RepeatedScalarFieldContainer[bytes]
    next_serial: int
    tree_size: int
    def __init__(self, signed_receipts: _Optional[_Iterable[bytes]] = ..., next_serial: _Optional[int] = ..., tree_size: _Optional[int] = ...) -> None: ...
