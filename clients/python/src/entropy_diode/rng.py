"""`random.Random` backed by the gateway, so every stdlib helper (randint, choice, shuffle,
sample, gauss, ...) draws on it, the way `random.SystemRandom` draws on os.urandom."""

from __future__ import annotations

import random
import threading
from typing import Any, NoReturn

from .client import EntropyClient

__all__ = ["EntropyRandom"]

_MAX_CALL = 1 << 20  # GetRandom's largest num_bytes


class EntropyRandom(random.Random):
    """A `random.Random` whose bits come from the gateway.

    Bytes are fetched `buffer_bytes` at a time and kept in this process until used: each byte is
    used once, here, and never by anyone else. Like SystemRandom, `seed()` does nothing and
    there is no state to save (`getstate`/`setstate` raise NotImplementedError). The bytes are
    what the client's calls get by default: its `accept_kinds` and `construction` (a client
    made with `construction=Construction.DRBG` gives DRBG output). Thread-safe.
    """

    def __init__(self, client: EntropyClient, *, buffer_bytes: int = 4096) -> None:
        if not 1 <= buffer_bytes <= _MAX_CALL:
            raise ValueError(f"buffer_bytes must be in 1..={_MAX_CALL}")
        self._client = client
        self._buffer_bytes = buffer_bytes
        self._buffer = bytearray()
        self._lock = threading.Lock()
        super().__init__()  # calls self.seed(), a no-op

    def random(self) -> float:
        """A float in [0, 1) from 53 random bits, like SystemRandom."""
        return (int.from_bytes(self._take(7), "big") >> 3) * 2.0**-53

    def getrandbits(self, k: int) -> int:
        """An int with k random bits. Also what randrange/randint/choice/shuffle use."""
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        if k == 0:
            return 0
        nbytes = (k + 7) // 8
        return int.from_bytes(self._take(nbytes), "big") >> (nbytes * 8 - k)

    def randbytes(self, n: int) -> bytes:
        return self._take(n)

    def seed(self, a: Any = None, version: int = 2) -> None:
        """Does nothing: a true random source cannot be seeded (as SystemRandom)."""

    def _notimplemented(self, *args: Any, **kwds: Any) -> NoReturn:
        raise NotImplementedError("EntropyRandom has no state to save or restore")

    getstate = setstate = _notimplemented

    def _take(self, n: int) -> bytes:
        if n < 0:
            raise ValueError("negative byte count")
        with self._lock:
            while len(self._buffer) < n:
                want = min(max(self._buffer_bytes, n - len(self._buffer)), _MAX_CALL)
                self._buffer += self._client.get_bytes(want)
            out = bytes(self._buffer[:n])
            del self._buffer[:n]
            return out
