"""Client for Entropy Diode, a gRPC service that hands out quantum random bytes, each byte to
one caller, once.

    from entropy_diode import EntropyClient
    with EntropyClient.from_env() as client:  # ENTROPY_ENDPOINT, ENTROPY_API_KEY
        roll = client.get_integers(1, 6)[0]

Layout: _calls.py (each call's request and response mapping, and the construction both
clients share), client.py (sync calls), aio.py (asyncio), stream.py (file-like StreamRandom
reader that reconnects), config.py (endpoint syntax, key checks, environment, reconnect knobs),
rng.py (random.Random subclass), tokens.py (the `secrets` module's calls), errors.py (one exception per gRPC status), types.py (status,
provenance and quality-report views, SourceKind, Construction, receipts as returned),
receipts/ (the offline verifier of receipts, heads, proofs and draw files: docs/receipts.md),
_gen/ (generated from proto/ by clients/generate.sh).
"""

from .aio import AsyncEntropyClient, AsyncStreamReader
from .client import EntropyClient
from .config import Endpoint, StreamOptions, check_api_key, parse_endpoint
from .errors import (
    AuthenticationError,
    DeadlineExceededError,
    EntropyError,
    FailedPreconditionError,
    InvalidArgumentError,
    PermissionDeniedError,
    QuotaExceededError,
    ReceiptError,
    UnavailableError,
)
from .rng import EntropyRandom
from .tokens import DEFAULT_ENTROPY, EntropySecrets
from .stream import StreamReader
from .types import (
    ChunkRef,
    ClassLevel,
    Construction,
    Draw,
    DrawReceipt,
    DrbgLabel,
    Fips1402,
    HeldUsage,
    MonteCarloPi,
    Provenance,
    PublicKeyInfo,
    QualityReport,
    RateUsage,
    ReceiptPage,
    Receipted,
    SourceKind,
    SourceStatus,
    Status,
    Usage,
)

__all__ = [
    "DEFAULT_ENTROPY",
    "AsyncEntropyClient",
    "AsyncStreamReader",
    "AuthenticationError",
    "ChunkRef",
    "ClassLevel",
    "Construction",
    "DeadlineExceededError",
    "Draw",
    "DrawReceipt",
    "DrbgLabel",
    "Endpoint",
    "EntropyClient",
    "EntropyError",
    "EntropyRandom",
    "EntropySecrets",
    "FailedPreconditionError",
    "Fips1402",
    "HeldUsage",
    "InvalidArgumentError",
    "MonteCarloPi",
    "PermissionDeniedError",
    "Provenance",
    "PublicKeyInfo",
    "QualityReport",
    "QuotaExceededError",
    "RateUsage",
    "ReceiptError",
    "ReceiptPage",
    "Receipted",
    "SourceKind",
    "SourceStatus",
    "Status",
    "StreamOptions",
    "StreamReader",
    "UnavailableError",
    "Usage",
    "check_api_key",
    "parse_endpoint",
]
