#!/usr/bin/env python3
"""Smoke test of the three programs as an operator runs them: scripts/diode-demo.sh starts
entropy-simulator -> entropy-collector -> entropy-gateway on loopback; entropy flows, its
provenance names the (simulated) quantum source, and SIGTERM stops everything. Also checks
that entropy-collector refuses bad config with exit 64 naming the key.

Usage: scripts/smoke/diode.py BIN_DIR
"""
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, free_port, grpcurl  # noqa: E402

check = harness.Checks()


def collector_config_errors(bin_dir):
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp, "k.key")
        key.write_text(os.urandom(32).hex())
        base = (
            f'collector_id = "c"\nkey_id = "k"\nkey_file = "{key}"\nmin_sources = 2\n'
            '[[gateway]]\nid = "nowhere"\nendpoint = "http://127.0.0.1:1"\n'
            '[[source]]\nname = "os"\ntype = "os"\n'
        )
        cfg = Path(tmp, "c.toml")
        cfg.write_text(base)
        r = subprocess.run([f"{bin_dir}/entropy-collector", "--config", str(cfg)], capture_output=True, text=True, timeout=30)
        check("collector: min_sources above the source count exits 64 naming it",
              r.returncode == 64 and "min_sources" in r.stderr, f"{r.returncode} {r.stderr}")
        cfg.write_text(base.replace("min_sources = 2", "min_sources = 1").replace('type = "os"', 'type = "quantis"'))
        r = subprocess.run([f"{bin_dir}/entropy-collector", "--config", str(cfg)], capture_output=True, text=True, timeout=30)
        check("collector: a quantis source without url exits 64 naming source[0].url",
              r.returncode == 64 and "source[0].url" in r.stderr, f"{r.returncode} {r.stderr}")


def demo(bin_dir):
    key = "smoke-diode-" + os.urandom(6).hex()
    ports = {"PUBLIC_PORT": free_port(), "INGEST_PORT": free_port(), "SIM_PORT": free_port(),
             "GATEWAY_METRICS_PORT": free_port(), "COLLECTOR_METRICS_PORT": free_port()}
    env = dict(os.environ, ENTROPY_DEV_API_KEY=key, BIN_DIR=bin_dir, SIM_RATE="400000",
               **{k: str(v) for k, v in ports.items()})
    addr = f"127.0.0.1:{ports['PUBLIC_PORT']}"
    proc = subprocess.Popen([str(ROOT / "scripts/diode-demo.sh")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        status = {}
        for _ in range(150):
            r = grpcurl(addr, "entropy.v1.EntropyService/GetStatus", key=key, data={})
            if r.returncode == 0:
                status = json.loads(r.stdout)
                if int(status.get("chunksAcceptedTotal", 0)) >= 3:
                    break
            time.sleep(0.2)
        check("chunks flow simulator -> collector -> gateway", int(status.get("chunksAcceptedTotal", 0)) >= 3, json.dumps(status))
        sources = status.get("sources", [])
        check("provenance names the simulated appliance as QUANTUM, healthy",
              any(s.get("name") == "quantis-sim" and s.get("kind") == "SOURCE_KIND_QUANTUM"
                  and s.get("health") == "SOURCE_HEALTH_HEALTHY" for s in sources), json.dumps(sources))
        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", key=key, data={"num_bytes": 64})
        data = base64.b64decode(json.loads(r.stdout)["data"]) if r.returncode == 0 else b""
        check("a client draws 64 bytes", len(data) == 64, r.stderr)
        r = grpcurl(addr, "entropy.v1.EntropyService/CheckQuality", key=key, data={"sample_bytes": 2500})
        check("the demo key holds quality:check (the recipes work unchanged)", r.returncode == 0, r.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    check("SIGTERM stops the demo", proc.returncode is not None, out[-2000:])
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"127.0.0.1:{ports['PUBLIC_PORT']}|127.0.0.1:{ports['SIM_PORT']}|collector.toml"],
                          capture_output=True, text=True).stdout.split()
    check("no component is left running", not left, f"pids {left}")
    check("the demo printed its grpcurl commands", "grpcurl -plaintext" in out, out[-2000:])
    refused = [line for line in out.splitlines() if "before_start" in line]
    check("the collector starts after the gateway's restart rule: no before_start refusal",
          not refused, "\n".join(refused[:5]))


if __name__ == "__main__":
    bin_dir = sys.argv[1]
    collector_config_errors(bin_dir)
    demo(bin_dir)
    sys.exit(check.summary("smoke (diode)"))
