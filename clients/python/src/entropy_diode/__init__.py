"""Client for Entropy Diode, a gRPC service that hands out quantum random bytes, each byte to
one caller, once.

    from entropy_diode import EntropyClient
    with EntropyClient("127.0.0.1:50051", api_key, tls=False) as client:
        roll = client.get_integers(1, 6)[0]

Layout: client.py (sync calls), aio.py (asyncio), stream.py (file-like StreamRandom reader
that reconnects), rng.py (random.Random subclass), errors.py (one exception per gRPC status),
types.py (status views), _gen/ (generated from proto/ by clients/generate.sh).
"""

from .aio import AsyncEntropyClient, AsyncStreamReader
from .client import EntropyClient
from .errors import (
    AuthenticationError,
    DeadlineExceededError,
    EntropyError,
    InvalidArgumentError,
    PermissionDeniedError,
    QuotaExceededError,
    UnavailableError,
)
from .rng import EntropyRandom
from .stream import StreamReader
from .types import SourceStatus, Status

__all__ = [
    "AsyncEntropyClient",
    "AsyncStreamReader",
    "AuthenticationError",
    "DeadlineExceededError",
    "EntropyClient",
    "EntropyError",
    "EntropyRandom",
    "InvalidArgumentError",
    "PermissionDeniedError",
    "QuotaExceededError",
    "SourceStatus",
    "Status",
    "StreamReader",
    "UnavailableError",
]
