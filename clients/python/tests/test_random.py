"""EntropyRandom: a random.Random whose every bit comes from the gateway, each byte used once."""

from __future__ import annotations

import os
import random

import pytest

from entropy_diode import EntropyClient, EntropyRandom


class CountingClient:
    """Stands in for EntropyClient.get_bytes, recording every byte it hands out."""

    def __init__(self) -> None:
        self.handed_out = bytearray()
        self.calls: list[int] = []

    def get_bytes(self, n: int) -> bytes:
        self.calls.append(n)
        data = os.urandom(n)
        self.handed_out += data
        return data


def counting_random(buffer_bytes: int = 64) -> tuple[EntropyRandom, CountingClient]:
    fake = CountingClient()
    return EntropyRandom(fake, buffer_bytes=buffer_bytes), fake  # type: ignore[arg-type]


def test_random_uses_53_bits_of_7_bytes() -> None:
    rng, fake = counting_random(buffer_bytes=7)
    x = rng.random()
    assert x == (int.from_bytes(fake.handed_out[:7], "big") >> 3) * 2.0**-53
    assert 0.0 <= x < 1.0


def test_getrandbits_takes_whole_bytes_in_order_and_never_reuses_them() -> None:
    rng, fake = counting_random(buffer_bytes=16)
    got = [rng.getrandbits(k) for k in (8, 12, 64, 1, 130)]
    used = sum((k + 7) // 8 for k in (8, 12, 64, 1, 130))
    stream = bytes(fake.handed_out[:used])
    assert got[0] == stream[0]
    assert got[1] == int.from_bytes(stream[1:3], "big") >> 4
    assert got[2] == int.from_bytes(stream[3:11], "big")
    assert got[3] == stream[11] >> 7
    assert got[4] == int.from_bytes(stream[12:29], "big") >> 6
    assert rng.getrandbits(0) == 0
    with pytest.raises(ValueError):
        rng.getrandbits(-1)


def test_big_requests_are_split_at_the_gateway_limit() -> None:
    rng, fake = counting_random()
    assert len(rng.randbytes(3 << 20)) == 3 << 20
    assert max(fake.calls) <= 1 << 20


def test_seed_does_nothing_and_there_is_no_state() -> None:
    rng, _ = counting_random()
    rng.seed(42)
    a = [rng.random() for _ in range(4)]
    rng.seed(42)
    assert [rng.random() for _ in range(4)] != a
    with pytest.raises(NotImplementedError):
        rng.getstate()
    with pytest.raises(NotImplementedError):
        rng.setstate(None)


def test_stdlib_helpers_work_live(client: EntropyClient) -> None:
    rng = EntropyRandom(client)
    assert isinstance(rng, random.Random)
    rolls = [rng.randint(1, 6) for _ in range(600)]
    assert set(rolls) == {1, 2, 3, 4, 5, 6}
    deck = list(range(52))
    rng.shuffle(deck)
    assert sorted(deck) == list(range(52))
    assert all(0.0 <= rng.random() < 1.0 for _ in range(1000))
    assert 0 <= rng.getrandbits(256) < 2**256
    assert len({rng.getrandbits(128) for _ in range(100)}) == 100
    assert rng.choice("abc") in "abc"
    assert len(rng.randbytes(100)) == 100
