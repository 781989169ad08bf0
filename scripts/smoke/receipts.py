#!/usr/bin/env python3
"""Smoke test of verifiable draws as a lottery operator and its auditor meet them: start
`entropy-gateway --dev --receipts-dir DIR`, run README.md's "Verifiable draws" walkthrough line by
line with the `entropy` CLI as written (the operator's draw, its proof, a redraw, two heads; the
auditor's offline verification, consistency and audit), check what each printed, tamper with the
draw file and expect the verifier to refuse it naming the check, then stop the gateway with
SIGTERM and expect a clean exit. About 5 s once the binaries are built.

Usage: scripts/smoke/receipts.py TARGET_DIR   (holding entropy-gateway and entropy)
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, free_port, wait_for  # noqa: E402

KEY = "smoke-receipts-key-" + os.urandom(8).hex()
MARKER = "<!-- smoke: receipts walkthrough"
check = harness.Checks()


def walkthrough():
    """The command lines of the README block after MARKER, comments left out."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme[readme.index(MARKER):], re.S).group(1)
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def main(target):
    target = Path(target).resolve()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = dict(os.environ, ENTROPY_DEV_API_KEY=KEY,
                   PATH=f"{target}:{os.environ.get('PATH', '')}")
        proc = subprocess.Popen(
            [target / "entropy-gateway", "--dev", "--listen-addr", f"127.0.0.1:{port}",
             "--metrics-listen-addr", "", "--receipts-dir", "receipts"],
            cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        outputs = {}
        try:
            def ready():
                r = subprocess.run(
                    ["entropy", "--endpoint", f"127.0.0.1:{port}", "bytes", "1", "--hex"],
                    env=dict(env, ENTROPY_API_KEY=KEY), capture_output=True, timeout=10)
                return r.returncode == 0

            check("the dev gateway serves with a receipt log", wait_for(ready, 30, 0.2))
            lines = walkthrough()
            check("README has the walkthrough", len(lines) >= 10, str(lines))
            for line in lines:
                if line.startswith("export "):
                    # The README's endpoint and key, with this run's port and key.
                    env["ENTROPY_ENDPOINT"] = f"127.0.0.1:{port}"
                    env["ENTROPY_API_KEY"] = KEY
                    continue
                r = subprocess.run(["bash", "-c", line], cwd=work, env=env,
                                   capture_output=True, text=True, timeout=60)
                outputs[line] = r.stdout
                check(f"README receipts line: {line[:90]}", r.returncode == 0,
                      f"exit {r.returncode}: {r.stderr[-1500:]}")

            published = (work / "receipts" / "public.key").read_text().strip()
            fetched = (work / "gateway.pub").read_text().strip()
            check("the key fetched is the key the gateway published", published == fetched,
                  f"{published} != {fetched}")
            draw = json.loads((work / "draw.json").read_text())
            check("the draw file carries the values, the receipt and, after prove, its inclusion",
                  draw.get("values", {}).get("kind") == "integers"
                  and len(draw["values"]["values"]) == 6
                  and all(1 <= v <= 49 for v in draw["values"]["values"])
                  and "inclusion" in draw, json.dumps(draw)[:500])
            verify = next((o for l, o in outputs.items() if " verify " in l), "")
            check("verify names the commitment and the inclusion it checked",
                  "commitment" in verify and "inclusion" in verify, verify[-1500:])
            audit = next((o for l, o in outputs.items() if " audit " in l), "")
            listed = [l for l in audit.splitlines() if re.match(r"\s*\d+\s", l)]
            check("the audit lists the draw and the redraw", len(listed) == 2, audit[-1500:])

            # The auditor is handed a draw file with one value changed: refused, exit 4.
            values = draw["values"]["values"]
            values[0] = 1 if values[0] != 1 else 2
            (work / "tampered.json").write_text(json.dumps(draw))
            r = subprocess.run(["entropy", "receipt", "verify", "tampered.json", "--public-key",
                                "gateway.pub"], cwd=work, env=env, capture_output=True,
                               text=True, timeout=30)
            check("a changed value is refused, naming the commitment",
                  r.returncode == 4 and "commitment" in r.stderr,
                  f"exit {r.returncode}: {r.stderr[-800:]}")
        finally:
            proc.send_signal(15)
            code = proc.wait(timeout=15)
            check("the gateway stops cleanly", code == 0,
                  f"exit {code}: {proc.stderr.read()[-2000:]}")
    return check.summary("receipts smoke")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
