#!/usr/bin/env python3
"""Offline statistical tests of the bytes a gateway serves, on three systems started fresh on
loopback: `dev` (entropy-gateway --dev, its in-process OS-RNG feed, TLS with dev-certs),
`dev-drbg` (the same, the client asking for DRBG output seeded from its pool) and `diode`
(scripts/diode-demo.sh: entropy-simulator at an unlimited rate -> entropy-collector ->
entropy-gateway, plaintext). From each, `entropy stream --total N` writes N bytes to a file for
ent and rngtest, and a live `entropy stream | dieharder -g 200 ...` feeds dieharder, which
ends the stream when it has read enough (a finite input runs dry: dieharder rewinds a file,
and stops with an error at the end of stdin, which counts as a failure here).

Before any of that, the self-check: the same ent and rngtest verdicts on deliberately bad
samples (biased bits, a stuck bit, a replayed block) must be FAIL, or the suite fails.

    quality.py [quick|full] [--bin-dir DIR] [--out DIR] [--bytes SIZE]
               [--dieharder-tests 0,8,15|all|none] [--dieharder-timeout-s S]
               [--systems dev,diode] [--no-install]

quick: N = 32 MiB, dieharder tests 0 (birthdays), 8 (count the 1s, stream) and 15 (runs).
full: N = 1 GiB, `dieharder -a`. Thresholds and their false-alarm rates: stats.py.
--out DIR writes DIR/quality.md, DIR/quality.json and the tools' output under DIR/raw/.
Installs ent, rng-tools5 (rngtest) and dieharder with apt-get when missing. Exits 1 on any
FAIL, printing one line per check.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
import report  # noqa: E402
import stats as qs  # noqa: E402
from harness import ROOT, free_port  # noqa: E402

MODES = {
    "quick": {"bytes": 32 << 20, "dieharder": ["0", "8", "15"], "dieharder_timeout_s": 600},
    "full": {"bytes": 1 << 30, "dieharder": ["all"], "dieharder_timeout_s": 24 * 3600},
}
APT_PACKAGES = {"ent": "ent", "rngtest": "rng-tools5", "dieharder": "dieharder"}
BINARIES = ("entropy-gateway", "entropy-collector", "entropy-simulator", "entropy")
check = harness.Checks(detail_on_pass=True)


def parse_size(text):
    """`32MiB`, `1GiB`, `500MB`, `4096` -> bytes."""
    m = re.fullmatch(r"(\d+)\s*([KMG]i?B?)?", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 32MiB or 1GiB")
    unit = (m[2] or "").upper().rstrip("B")
    factor = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "KI": 1 << 10, "MI": 1 << 20, "GI": 1 << 30}[unit]
    return int(m[1]) * factor


def install_tools():
    """apt-get install what is missing (sudo when not root), as scripts/test.sh does."""
    missing = sorted({pkg for tool, pkg in APT_PACKAGES.items() if not shutil.which(tool)})
    if not missing:
        return
    print(f"installing {' '.join(missing)} with apt-get", flush=True)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=True)
    subprocess.run([*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq",
                    "--no-install-recommends", *missing], check=True)
    # rng-tools5 also ships rngd, which the package may start; only rngtest is wanted here.
    if "rng-tools5" in missing:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        if shutil.which("systemctl") and subprocess.run(["systemctl", "is-active", "--quiet", "rngd"],
                                                        **quiet).returncode == 0:
            subprocess.run([*sudo, "systemctl", "disable", "--now", "rngd"], check=False)
        elif os.access("/etc/init.d/rngd", os.X_OK):
            subprocess.run([*sudo, "/etc/init.d/rngd", "stop"], check=False, **quiet)


def client_env(key, endpoint, ca_file=None):
    """The CLI's environment: endpoint, key and CA in ENTROPY_* (the key stays out of argv)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENTROPY_")}
    env.update(ENTROPY_ENDPOINT=endpoint, ENTROPY_API_KEY=key)
    if ca_file:
        env["ENTROPY_CA_FILE"] = str(ca_file)
    return env


def start_dev(bins, procs, tmp, key):
    """entropy-gateway --dev serving TLS with a throwaway CA (dev-certs), as scripts/smoke/dev.py does."""
    certs = tmp / "certs"
    harness.run([bins / "entropy-gateway", "dev-certs", "--out", certs])
    port = free_port()
    procs.start("gateway", [str(bins / "entropy-gateway"), "--dev", "--listen-addr", f"127.0.0.1:{port}",
                            "--metrics-listen-addr", "", "--tls-cert-file", str(certs / "gateway.pem"),
                            "--tls-key-file", str(certs / "gateway.key")],
                env=dict(os.environ, ENTROPY_DEV_API_KEY=key))
    return ("gateway", client_env(key, f"https://127.0.0.1:{port}", certs / "ca.pem"),
            "entropy-gateway --dev: in-process collector on the OS RNG, TLS (dev-certs CA)")


def start_diode(bins, procs, tmp, key):
    """scripts/diode-demo.sh with SIM_RATE=0 (the simulator's rate limit off), free ports."""
    ports = {name: str(free_port()) for name in
             ("PUBLIC_PORT", "INGEST_PORT", "SIM_PORT", "GATEWAY_METRICS_PORT", "COLLECTOR_METRICS_PORT")}
    procs.start("diode", [str(ROOT / "scripts/diode-demo.sh")],
                env=dict(os.environ, ENTROPY_DEV_API_KEY=key, BIN_DIR=str(bins), SIM_RATE="0", **ports))
    return ("diode", client_env(key, f"http://127.0.0.1:{ports['PUBLIC_PORT']}"),
            "scripts/diode-demo.sh: entropy-simulator (HTTPS, --rate-bytes-per-s 0 = unlimited) -> "
            "entropy-collector (health tests, one source, 16 KiB chunks) -> entropy-gateway, plaintext")


def start_dev_drbg(bins, procs, tmp, key):
    """start_dev, the CLI asking for DRBG output (ENTROPY_CONSTRUCTION=drbg): a CTR_DRBG instance
    per stream, seeded from the dev gateway's pool."""
    name, env, _ = start_dev(bins, procs, tmp, key)
    env["ENTROPY_CONSTRUCTION"] = "drbg"
    return (name, env, "entropy-gateway --dev as above, the stream asking for CONSTRUCTION_DRBG: "
            "CTR_DRBG (AES-256) output seeded and reseeded from the pool")


SYSTEMS = {"dev": start_dev, "dev-drbg": start_dev_drbg, "diode": start_diode}


def wait_serving(bins, env, procs, name, timeout_s=60):
    """True once `entropy status` says serving (the pool reached its low watermark)."""
    def serving():
        if not procs.alive(name):
            return "exited"
        r = subprocess.run([str(bins / "entropy"), "status"], env=env, capture_output=True, text=True, timeout=30)
        return r.returncode == 0 and re.search(r"^serving:\s+true", r.stdout, re.M) is not None
    return harness.wait_for(serving, timeout_s) is True


def stream_to_file(bins, env, n, path):
    """`entropy stream --total N > path`; returns (ok, seconds, detail)."""
    start = time.monotonic()
    with open(path, "wb") as out:
        r = subprocess.run([str(bins / "entropy"), "stream", "--total", str(n)], env=env, stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=max(600, n // (1 << 20)))
    secs = time.monotonic() - start
    size = path.stat().st_size
    return r.returncode == 0 and size == n, secs, f"{size:,} bytes in {secs:.1f} s, exit {r.returncode} {r.stderr[-300:]}"


def dieharder_live(bins, env, test, timeout_s, echo_prefix=None):
    """`entropy stream | dieharder -g 200 (-d TEST | -a)`; returns (stats, output, seconds,
    stream exit). dieharder ends the stream by closing the pipe (the CLI exits 0 on that)."""
    args = ["-a"] if test == "all" else ["-d", test]
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as src_err:
        src = subprocess.Popen([str(bins / "entropy"), "stream"], env=env, stdout=subprocess.PIPE, stderr=src_err)
        dh = subprocess.Popen(["dieharder", "-g", "200", *args], stdin=src.stdout, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        src.stdout.close()  # dieharder holds the read end; its exit is the stream's EPIPE
        timer = threading.Timer(timeout_s, dh.kill)
        timer.start()
        lines = []
        for line in dh.stdout:
            lines.append(line)
            if echo_prefix:
                print(f"{echo_prefix}{line}", end="", flush=True)
        dh.wait()
        timer.cancel()
        try:
            src_code = src.wait(timeout=30)
        except subprocess.TimeoutExpired:
            src.kill()
            src_code = src.wait()
        src_err.seek(0)
        src_msg = src_err.read()[-300:]
    out = "".join(lines)
    stats = qs.dieharder_judge(out)
    if dh.returncode != 0 or src_code != 0:
        stats.append(qs.Stat("dieharder", "processes", f"dieharder exit {dh.returncode}, stream exit {src_code}",
                             "both 0 (a killed dieharder ran past its time limit)", False, src_msg))
    return stats, out, time.monotonic() - start


def judge(label, stats):
    """One check line per statistic."""
    for s in stats:
        detail = f"{s.value}; bound {s.threshold}" + (f"; {s.note}" if s.note and not s.ok else "")
        check(f"{label}: {s.tool} {s.statistic}", s.ok, detail)


def self_check(tmp, raw):
    """The thresholds must fail deliberately bad samples: each named tool's verdict is FAIL."""
    rows = []
    for slug, name, data, must_fail in qs.bad_samples():
        path = tmp / "bad.bin"
        path.write_bytes(data)
        results = {"ent": qs.ent(path, len(data)), "rngtest": qs.rngtest(path, len(data))}
        for tool, (stats, out) in results.items():
            failed = not qs.tool_ok(stats)
            broken = "; ".join(f"{s.statistic} {s.value}" for s in stats if not s.ok) or "every statistic held"
            if tool in must_fail:
                check(f"self-check: {tool} fails {name}", failed, broken)
            else:
                print(f"     self-check: {tool} on {name}: {'FAIL' if failed else 'pass'} (not expected to fail)")
            rows.append({"sample": name, "tool": tool, "verdict": "FAIL" if failed else "pass",
                         "must_fail": tool in must_fail, "failed_statistics": broken})
            if raw:
                (raw / f"self-check-{slug}-{tool}.txt").write_text(out)
        path.unlink()
    return rows


def run_system(name, bins, args, tmp, raw):
    """Starts one system, tests its bytes, stops it; returns its part of the report."""
    key = f"quality-{os.urandom(8).hex()}"
    logdir = tmp / name
    logdir.mkdir()
    procs = harness.Procs(logdir)
    result = {"stats": [], "dieharder_seconds": {}}
    try:
        proc_name, env, result["description"] = SYSTEMS[name](bins, procs, tmp, key)
        serving = wait_serving(bins, env, procs, proc_name)
        if not check(f"{name}: serving", serving, "" if serving else procs.log_tail(proc_name)):
            return result
        sample = tmp / f"{name}.bin"
        ok, secs, detail = stream_to_file(bins, env, args.bytes, sample)
        result["stream_seconds"] = round(secs, 2)
        if check(f"{name}: entropy stream --total {args.bytes} wrote every byte", ok, detail):
            for tool in (qs.ent, qs.rngtest):
                stats, out = tool(sample, args.bytes)
                judge(name, stats)
                result["stats"] += stats
                if raw:
                    (raw / f"{name}-{tool.__name__}.txt").write_text(out)
        sample.unlink(missing_ok=True)
        for test in args.dieharder_tests:
            echo = f"{name} | " if test == "all" else None
            stats, out, secs = dieharder_live(bins, env, test, args.dieharder_timeout_s, echo)
            judge(name, stats)
            result["stats"] += stats
            result["dieharder_seconds"][test] = round(secs, 1)
            rate = qs.dieharder_rate(out)
            print(f"     {name}: dieharder {'-a' if test == 'all' else '-d ' + test}: {secs:.1f} s"
                  + (f" (it timed its input at {rate * 4 / 1e6:.0f} MB/s)" if rate else ""), flush=True)
            if raw:
                (raw / f"{name}-dieharder-{test}.txt").write_text(out)
    finally:
        procs.stop()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", nargs="?", choices=MODES, default="quick")
    ap.add_argument("--bin-dir", type=Path, default=ROOT / "target/release")
    ap.add_argument("--out", type=Path, help="write quality.md, quality.json and raw/ here")
    ap.add_argument("--bytes", type=parse_size, help="sample size for ent and rngtest (quick 32MiB, full 1GiB)")
    ap.add_argument("--dieharder-tests", help="comma-separated dieharder test numbers, 'all' (-a) or 'none'")
    ap.add_argument("--dieharder-timeout-s", type=int, help="time limit of each dieharder run")
    ap.add_argument("--systems", default="dev,dev-drbg,diode",
                    help="comma-separated: dev, dev-drbg (its DRBG output), diode")
    ap.add_argument("--no-install", action="store_true", help="do not apt-get install missing tools")
    args = ap.parse_args()
    mode = MODES[args.mode]
    args.bytes = args.bytes or mode["bytes"]
    tests = args.dieharder_tests or ",".join(mode["dieharder"])
    args.dieharder_tests = [] if tests == "none" else tests.split(",")
    args.dieharder_timeout_s = args.dieharder_timeout_s or mode["dieharder_timeout_s"]
    systems = args.systems.split(",")
    bins = args.bin_dir.resolve()
    missing = [b for b in BINARIES if not (bins / b).is_file()] + [s for s in systems if s not in SYSTEMS]
    if missing or args.bytes < 1 << 20:
        ap.error(f"missing in {bins} or unknown: {', '.join(missing)} (bench/quality.sh builds them)"
                 if missing else "--bytes must be at least 1MiB")
    if not args.no_install:
        install_tools()

    command = os.environ.get("QUALITY_COMMAND") or " ".join(["scripts/quality/quality.py", *sys.argv[1:]])
    meta = report.metadata(ROOT, args, command)
    print(f"quality {args.mode}: {args.bytes:,} bytes per system for ent and rngtest, dieharder "
          f"{','.join(args.dieharder_tests) or 'none'}, systems {','.join(systems)}, binaries {bins}", flush=True)
    raw = None
    if args.out:
        raw = args.out / "raw"
        raw.mkdir(parents=True, exist_ok=True)
    seconds, results = {}, {}
    with tempfile.TemporaryDirectory(prefix="quality-") as tmp:
        tmp = Path(tmp)
        start = time.monotonic()
        self_rows = self_check(tmp, raw)
        seconds["self-check"] = round(time.monotonic() - start, 1)
        for name in systems:
            start = time.monotonic()
            results[name] = run_system(name, bins, args, tmp, raw)
            seconds[name] = round(time.monotonic() - start, 1)
    meta["load_average_end"] = os.getloadavg()
    if args.out:
        report.write(args.out, meta, results, self_rows, seconds, check)
        print(f"report: {args.out / 'quality.md'}")
    print("seconds: " + json.dumps(seconds))
    return check.summary("quality")


if __name__ == "__main__":
    sys.exit(main())
