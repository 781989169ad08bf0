#!/usr/bin/env python3
"""Smoke test of the Connect protocol as a user meets it: start `entropy-gateway --dev` with
Connect on, run every recipe of README.md's "JSON over HTTP" block as written (curl and
`buf curl`), check what each printed, then stop the gateway with SIGTERM and expect a clean
exit. About 5 s once the binary is built.

Usage: scripts/smoke/connect.py PATH_TO_ENTROPY_GATEWAY
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, free_port, wait_for  # noqa: E402

KEY = "smoke-connect-key-" + os.urandom(8).hex()
MARKER = "<!-- smoke: connect recipes"
check = harness.Checks()


def recipes():
    """The command lines of the README block after MARKER."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme[readme.index(MARKER):], re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def envelopes(data):
    """(flags, payload) of each envelope of a Connect streaming body."""
    out, i = [], 0
    while i + 5 <= len(data):
        n = int.from_bytes(data[i + 1:i + 5], "big")
        out.append((data[i], data[i + 5:i + 5 + n]))
        i += 5 + n
    return out if i == len(data) else None


def json_objects(text):
    """The JSON objects printed back to back (buf curl prints one per stream message)."""
    decoder, out, i, text = json.JSONDecoder(), [], 0, text.strip()
    while i < len(text):
        obj, i = decoder.raw_decode(text, i)
        out.append(obj)
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def judge(recipe, stdout, workdir):
    """Whether a recipe's output is what the README says it prints."""
    if "StreamRandom" in recipe and "printf" in recipe:
        body = (workdir / "stream.bin").read_bytes()
        frames = envelopes(body) or []
        data = sum(len(base64.b64decode(json.loads(p).get("data", ""))) for f, p in frames if f == 0)
        return bool(frames) and frames[-1] == (2, b"{}") and data == 65536, f"{len(body)} bytes, {data} drawn"
    if "StreamRandom" in recipe:  # buf curl: one JSON object per message
        data = sum(len(base64.b64decode(m.get("data", ""))) for m in json_objects(stdout))
        return data == 65536, f"{data} bytes"
    if '"numBytes": 0' in recipe:
        text, _, code = stdout.rpartition(" HTTP ")
        error = json.loads(text)
        return (code.strip() == "400" and error.get("code") == "invalid_argument"
                and "num_bytes" in error.get("message", "")), stdout
    reply = json.loads(stdout)
    if "ENCODING_HEX" in recipe:
        return re.fullmatch(r"[0-9a-f]{32}", reply.get("text", "")) is not None, stdout
    if "GetRandom" in recipe:
        return len(base64.b64decode(reply.get("data", ""))) == 32 and "provenance" in reply, stdout
    if "GetIntegers" in recipe:
        values = [int(v) for v in reply.get("values", [])]
        return len(values) == 10 and all(1 <= v <= 6 for v in values), stdout
    if "GetStatus" in recipe:
        return "poolCapacityBytes" in reply, stdout
    return False, f"no judgement for {recipe}"


def main(binary):
    port = free_port()
    env = dict(os.environ, ENTROPY_DEV_API_KEY=KEY, PATH=f"{os.environ.get('PATH', '')}:{Path.home() / 'go/bin'}")
    proc = subprocess.Popen(
        [binary, "--dev", "--connect-enabled", "true", "--listen-addr", f"127.0.0.1:{port}",
         "--metrics-listen-addr", ""],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    status = [base + "/entropy.v1.EntropyService/GetStatus"]

    def ready():
        r = subprocess.run(["curl", "-sS", "-H", f"x-api-key: {KEY}", "-H", "content-type: application/json",
                            "-d", "{}", *status], capture_output=True, text=True, timeout=10)
        return r.returncode == 0 and json.loads(r.stdout or "{}").get("serving") is True

    try:
        check("the dev gateway serves Connect and fills its pool", wait_for(ready, 20, 0.1))
        lines = recipes()
        check("README has curl and buf curl recipes",
              sum(l.startswith("curl ") or "| curl " in l for l in lines) >= 4
              and sum(l.startswith("buf curl ") for l in lines) >= 2, str(lines))
        with tempfile.TemporaryDirectory() as tmp:
            for recipe in lines:
                cmd = recipe.replace("127.0.0.1:50051", f"127.0.0.1:{port}")
                # From the repository root, as the README says (buf curl --schema proto).
                r = subprocess.run(["bash", "-c", cmd], cwd=ROOT if "--schema" in cmd else tmp, env=env,
                                   capture_output=True, text=True, timeout=60)
                ok, detail = (False, r.stderr) if r.returncode != 0 else judge(recipe, r.stdout, Path(tmp))
                check(f"README Connect recipe: {recipe[:90]}", ok, detail)
    finally:
        proc.send_signal(15)
        code = proc.wait(timeout=15)
        check("the gateway stops cleanly", code == 0, f"exit {code}: {proc.stderr.read()[-2000:]}")
    return check.summary("Connect smoke")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
