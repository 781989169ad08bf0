#!/usr/bin/env python3
"""Writes the two samples the integration tests compare with `ent` and `rngtest`.

    python3 quality/tests/data/make_fixtures.py   # rewrites both files, byte for byte

Python's `random` with a fixed seed is the generator (its output for a seed is stable across
Python 3 releases since 3.9, when `randbytes` arrived), so the files can be checked rather than
trusted. The tests compare against numbers `ent` and `rngtest` printed for these files; the
commands and their output are in quality/tests/it/ent.rs and quality/tests/it/rngtest.rs.
"""

import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK = 2500  # bytes in a FIPS 140-2 block of 20,000 bits


def ent_sample() -> bytes:
    """64 KiB of pseudo-random bytes."""
    return random.Random(20261124).randbytes(64 * 1024)


def rngtest_sample() -> bytes:
    """4 bytes rngtest reads before its first block (the continuous test's first word), then 16
    blocks, some of them bad in chosen ways, then 1000 bytes short of a block (untested)."""
    rng = random.Random(1402)

    def good() -> bytearray:
        return bytearray(rng.randbytes(BLOCK))

    def biased() -> bytearray:  # each bit one with probability 0.55: monobit and more fail
        bits = [rng.random() < 0.55 for _ in range(8 * BLOCK)]
        return bytearray(sum(bit << (7 - i) for i, bit in enumerate(bits[j:j + 8]))
                         for j in range(0, len(bits), 8))

    def long_run() -> bytearray:  # a run of exactly 26 ones, read most significant bit first
        block = good()
        block[1000:1005] = bytes([0x01, 0xFF, 0xFF, 0xFF, 0x80])
        return block

    def poker() -> bytearray:  # nibble 3 too frequent: poker fails, monobit does not
        block = good()
        for i in range(100):
            block[25 * i + 7] = 0x33
        return block

    blocks = [good() for _ in range(10)]
    blocks += [biased(), long_run(), poker(), bytearray([0x55] * BLOCK), bytearray(BLOCK), good()]
    return rng.randbytes(4) + b"".join(blocks) + rng.randbytes(1000)


if __name__ == "__main__":
    (HERE / "ent_sample.bin").write_bytes(ent_sample())
    (HERE / "rngtest_sample.bin").write_bytes(rngtest_sample())
