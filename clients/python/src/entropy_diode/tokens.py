"""The standard library's `secrets` module, drawing on the gateway: `token_bytes`, `token_hex`,
`token_urlsafe`, `randbelow` and `choice`, with the same signatures, defaults and errors.

    from entropy_diode import EntropyClient, EntropySecrets
    with EntropyClient.from_env() as client:
        secrets = EntropySecrets(client)
        session_id = secrets.token_urlsafe()   # 32 bytes from the gateway, base64url
        winner = secrets.choice(entrants)

Each token is one GetRandom call of exactly its bytes (served to this caller once, never
cached). `randbelow` and `choice` use an `EntropyRandom` of their own: unbiased (rejection
sampling on whole bytes), each byte used once. Tokens carry the client's `accept_kinds` and
`construction`.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TypeVar

from .client import EntropyClient
from .rng import EntropyRandom

__all__ = ["DEFAULT_ENTROPY", "EntropySecrets"]

DEFAULT_ENTROPY = 32  # bytes, like secrets.DEFAULT_ENTROPY
_MAX_TOKEN = 1 << 20  # GetRandom's largest num_bytes

T = TypeVar("T")


class EntropySecrets:
    """`secrets` on an `EntropyClient`. Thread-safe."""

    def __init__(self, client: EntropyClient) -> None:
        self._client = client
        # Small draws: randbelow and choice need a few bytes each.
        self._random = EntropyRandom(client, buffer_bytes=64)

    def token_bytes(self, nbytes: int | None = None) -> bytes:
        """`nbytes` random bytes (default `DEFAULT_ENTROPY`); 0 gives b"" without a call."""
        n = DEFAULT_ENTROPY if nbytes is None else nbytes
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"nbytes must be an int, not {type(n).__name__}")
        if not 0 <= n <= _MAX_TOKEN:
            raise ValueError(f"nbytes is {n}; it must be 0..={_MAX_TOKEN}")
        return self._client.get_bytes(n) if n else b""

    def token_hex(self, nbytes: int | None = None) -> str:
        """`nbytes` random bytes as 2·nbytes lowercase hex digits."""
        return self.token_bytes(nbytes).hex()

    def token_urlsafe(self, nbytes: int | None = None) -> str:
        """`nbytes` random bytes, base64url without padding (about 1.3 characters a byte)."""
        return base64.urlsafe_b64encode(self.token_bytes(nbytes)).rstrip(b"=").decode("ascii")

    def randbelow(self, exclusive_upper_bound: int) -> int:
        """A uniform integer in [0, exclusive_upper_bound); ValueError when the bound is < 1."""
        if exclusive_upper_bound <= 0:
            raise ValueError("Upper bound must be positive.")
        return self._random.randrange(exclusive_upper_bound)

    def choice(self, seq: Sequence[T]) -> T:
        """A uniformly chosen element of the non-empty sequence `seq` (IndexError when empty)."""
        return self._random.choice(seq)
