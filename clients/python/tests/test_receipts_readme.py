"""The README's receipts section runs: its three code blocks (draw with a receipt and save the
draw file; verify the file offline; audit the log) are taken from README.md as written. Here the
offline one, on a draw file and key made from the spec's vectors, accepts the file and refuses
it once a value is changed; test_receipts_live.py runs all three against a gateway."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from test_receipts import DRAWS, VECTORS, draw_file

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Receipts: verifiable draws"


def readme_blocks() -> list[str]:
    """The section's python blocks, in order: draw, verify, audit."""
    text = README.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    assert len(blocks) == 3, "the receipts section has three python blocks: draw, verify, audit"
    return blocks


def run_block(code: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_readme_verification_accepts_a_good_draw_file_and_refuses_a_changed_one(
    tmp_path: Path,
) -> None:
    _, verify, _ = readme_blocks()
    (tmp_path / "public.key").write_text(VECTORS["public_key"] + "\n")
    (tmp_path / "draw.json").write_text(draw_file(0).to_json())
    ok = run_block(verify, tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"receipt 0 opens to {DRAWS[0]['values']['values']}"

    doc = json.loads((tmp_path / "draw.json").read_text())
    doc["values"]["values"][0] = 4  # the operator "remembers" another first number
    (tmp_path / "draw.json").write_text(json.dumps(doc))
    bad = run_block(verify, tmp_path)
    assert bad.returncode != 0
    assert "ReceiptError" in bad.stderr and "do not open" in bad.stderr
