"""EntropySecrets: the `secrets` module's calls on the gateway, with its signatures and errors."""

from __future__ import annotations

import base64
import secrets as stdlib_secrets
from collections import Counter

import pytest

from entropy_diode import DEFAULT_ENTROPY, EntropyClient, EntropySecrets
from entropy_diode.types import Construction

from conftest import Gateway


def test_tokens_have_the_stdlib_lengths_and_alphabets(client: EntropyClient) -> None:
    s = EntropySecrets(client)
    assert DEFAULT_ENTROPY == stdlib_secrets.DEFAULT_ENTROPY
    assert len(s.token_bytes()) == DEFAULT_ENTROPY
    assert [len(s.token_bytes(n)) for n in (0, 1, 17, 4096)] == [0, 1, 17, 4096]
    hex_token = s.token_hex(16)
    assert len(hex_token) == 32 and int(hex_token, 16) >= 0 and hex_token == hex_token.lower()
    for n in (None, 1, 2, 3, 31, 33):
        token = s.token_urlsafe(n)
        assert "=" not in token and set(token) <= set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        )
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        assert len(raw) == (DEFAULT_ENTROPY if n is None else n)


def test_tokens_come_from_the_gateway_once_each(gateway: Gateway, client: EntropyClient) -> None:
    before = client.status().served_bytes_total
    s = EntropySecrets(client)
    tokens = [s.token_bytes(32) for _ in range(50)]
    assert len(set(tokens)) == 50
    # At least the tokens' bytes were served: they are not made here.
    assert client.status().served_bytes_total - before >= 50 * 32


def test_bad_sizes_and_bounds_fail_as_the_stdlib_does(client: EntropyClient) -> None:
    s = EntropySecrets(client)
    with pytest.raises(ValueError, match="nbytes is -1"):
        s.token_bytes(-1)
    with pytest.raises(ValueError, match="1048576"):
        s.token_hex((1 << 20) + 1)
    with pytest.raises(TypeError):
        s.token_bytes(2.5)  # type: ignore[arg-type]
    for bound in (0, -5):
        with pytest.raises(ValueError, match="positive"):
            s.randbelow(bound)
    with pytest.raises(IndexError):
        s.choice([])


def test_randbelow_and_choice_are_in_range_and_cover_it(client: EntropyClient) -> None:
    s = EntropySecrets(client)
    assert {s.randbelow(1) for _ in range(20)} == {0}
    draws = Counter(s.randbelow(6) for _ in range(3000))
    assert set(draws) == set(range(6))
    # Each face near 500 (a chi-square with 5 degrees of freedom far past any plausible value).
    chi2 = sum((c - 500) ** 2 / 500 for c in draws.values())
    assert chi2 < 40, draws
    big = 1 << 200
    assert all(0 <= s.randbelow(big) < big for _ in range(50))
    faces = "abcdef"
    assert set(s.choice(faces) for _ in range(300)) == set(faces)


def test_tokens_follow_the_clients_construction(gateway: Gateway) -> None:
    with EntropyClient(gateway.target, gateway.api_key, construction=Construction.DRBG) as c:
        before = c.status().drbg_served_bytes_total
        EntropySecrets(c).token_bytes(64)
        assert c.status().drbg_served_bytes_total - before == 64
