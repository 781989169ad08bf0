"""Every example runs against the live gateway and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Gateway

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

EXPECTED = {
    "dice.py": r"([1-6] ){9}[1-6]",
    "password.py": r"\S{20}",
    "tokens.py": r"[0-9a-f]{32} [A-Za-z0-9_-]{43} [0-9]{6}",
    "uuids.py": rf"({UUID4}\n){{4}}{UUID4}",
    "seed_prng.py": r"seed=[0-9a-f]{64} gauss: \S+\nshuffled: \[.*\]",
    "async_bytes.py": r"[0-9a-f]{64} (heads|tails) \[.*\]\nstreamed 1048576 bytes",
    "stream_to_file.py": r"wrote 8388608 bytes to .*",
    # Against the dev gateway: one OS source, so the quantum-only call fails (naming the pool).
    "provenance.py": r"[0-9a-f]{64} \['OS'\] \['dev-collector'\] \d+ chunk\(s\)\n"
    r"no quantum source: .*QUANTUM.*\nquality (passed|failed: .*), min-entropy \d\.\d{3} bits/byte",
}


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example(name: str, gateway: Gateway, tmp_path: Path) -> None:
    env = dict(os.environ, ENTROPY_ENDPOINT=gateway.target, ENTROPY_API_KEY=gateway.api_key)
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(tmp_path / "out.bin")],
        env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(EXPECTED[name], r.stdout.strip()), r.stdout
    if name == "stream_to_file.py":
        assert (tmp_path / "out.bin").stat().st_size == 8 << 20
