"""Every client language's stream reader (clients/conformance: the client libraries' readers,
as users run them) started against one endpoint with the bytes it receives kept, and its report
read back: the load chaos/chaos.py and lab/scaleout.py keep running through their faults.

Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness import ROOT

sys.path.insert(0, str(ROOT / "clients/conformance"))
import run as conformance  # noqa: E402  (the languages and their reader programs)

CHUNK = 64 << 10  # bytes a read
PACE_MS = 40  # between reads: about 1.6 MB/s a reader, so every reader is still mid-stream when a fault lands
PYTHON = conformance.CLIENTS / "python/.venv/bin/python"  # the Python client's venv, for the drawers


def start(langs: list[conformance.Language], tag: str, endpoint: str, total: int, work: Path, env: dict,
          outputs: list[Path], prefix: tuple = ()) -> dict[str, conformance.Reader]:
    """Every language's reader for `total` bytes from `endpoint` (run under `prefix`, an `ip netns
    exec`, say), writing WORK/TAG.LANG.bin (added to `outputs`) and WORK/TAG.LANG.err; started
    one after another in conformance.START_ORDER, each once the one before has bytes."""

    def launch(lang: conformance.Language) -> conformance.Reader:
        out = work / f"{tag}.{lang.name}.bin"
        out.touch()
        outputs.append(out)
        cmd = [*prefix, *lang.run, "reader", "--endpoint", endpoint, "--total", total,
               "--chunk-bytes", CHUNK, "--out", out, "--pace-ms", PACE_MS]
        return subprocess.Popen([str(c) for c in cmd], cwd=conformance.CLIENTS / lang.cwd, env=env,
                                stdout=subprocess.PIPE, stderr=(work / f"{tag}.{lang.name}.err").open("wb"),
                                text=True), out

    return conformance.start_staggered(langs, launch, CHUNK)


def reports(tag: str, started: dict[str, conformance.Reader], work: Path, timeout: float) -> dict[str, dict]:
    """Each reader's report ({"code", "bytes", "reconnects", "error"}) once it ends (killed after
    `timeout`), with "wrote": the bytes in its output file."""
    out_reports = {}
    for name, (proc, out) in started.items():
        try:
            stdout, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            stdout = json.dumps({"code": "did not finish", "error": f"within {timeout:.0f} s"})
        try:
            report = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            report = {"code": "no report", "error": (work / f"{tag}.{name}.err").read_text(errors="replace")[-400:]}
        report["wrote"] = out.stat().st_size
        out_reports[name] = report
    return out_reports
