"""What every test script in scripts/ and the benchmark driver in bench/driver/ need, written
once: a check recorder, free ports, grpcurl, ghz, HTTP GET, polling with a bound, a command
runner and a set of started processes stopped together.

Each suite's entry script (scripts/<suite>/*.py) and bench/driver/ put scripts/lib/ on
sys.path first. Standard library only.
"""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from ports import free_port  # noqa: F401 (re-exported: the one port picker, scripts/lib/ports.py)

ROOT = Path(__file__).resolve().parents[2]


class Checks:
    """Named pass/fail results, printed as they come ("ok  name" or "FAIL name: detail")."""

    def __init__(self, detail_on_pass=False):
        self.results = []
        self.detail_on_pass = detail_on_pass

    def __call__(self, name, ok, detail=""):
        """Records one check; returns `ok` so it can guard what follows."""
        ok = bool(ok)
        self.results.append((name, ok))
        shown = detail and (not ok or self.detail_on_pass)
        line = f"{'ok  ' if ok else 'FAIL'} {name}"
        if shown:
            line += f"  [{detail}]" if self.detail_on_pass else f": {detail}"
        print(line, flush=True)
        return ok

    @property
    def passed(self):
        return sum(ok for _, ok in self.results)

    @property
    def failed(self):
        return len(self.results) - self.passed

    def all_ok(self):
        """True when at least one check ran and none failed."""
        return bool(self.results) and self.failed == 0

    def summary(self, label):
        """Prints "label: N passed, M failed"; returns the exit code (0 only if all passed)."""
        print(f"\n{label}: {self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.all_ok() else 1


def tool(name):
    """A command on PATH, else where `go install` puts it (~/go/bin): the test command installs
    ghz and grpcurl there."""
    import shutil
    return shutil.which(name) or os.path.expanduser(f"~/go/bin/{name}")


def grpcurl(addr, method, *, key=None, data=None, cacert=None, extra=(), timeout=30):
    """Runs grpcurl against `addr` (plaintext unless `cacert` is given); returns the
    CompletedProcess. `method` may be a full method name or a grpcurl verb (`list`)."""
    cmd = ["grpcurl"]
    cmd += ["-cacert", str(cacert)] if cacert else ["-plaintext"]
    cmd += list(extra)
    if key:
        cmd += ["-H", f"authorization: Bearer {key}"]
    if data is not None:
        cmd += ["-d", json.dumps(data)]
    cmd += [addr, method] if method else [addr]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def gen_secrets(bin_dir, out):
    """deploy/gen-secrets.sh into `out`, with BIN_DIR's entropy-gateway: the secrets compose mounts
    (TLS for both gateway listeners, mTLS for the collector, the demo client and MAC keys).
    Returns the CompletedProcess."""
    return run([ROOT / "deploy/gen-secrets.sh", out], check=False,
               env=dict(os.environ, ENTROPY_GATEWAY_BIN=str(Path(bin_dir) / "entropy-gateway")))


def ghz_getrandom(key, cacert, num_bytes, *options):
    """ghz's argv for GetRandom(`num_bytes`) calls over TLS with API key `key`, its report as JSON;
    `options` (how many calls, how many at once, the target last) follow."""
    return [tool("ghz"), "--proto", ROOT / "proto/entropy/v1/entropy.proto", "--import-paths", ROOT / "proto",
            "--call", "entropy.v1.EntropyService/GetRandom", "-d", json.dumps({"num_bytes": num_bytes}),
            "--metadata", json.dumps({"authorization": f"Bearer {key}"}), "--cacert", cacert,
            "--format", "json", *options]


def ghz_summary(stdout, stderr):
    """What a run needs from ghz's JSON report; the first errors' texts join the status codes."""
    try:
        out = json.loads(stdout)
    except ValueError:
        raise RuntimeError(f"ghz gave no report: {stderr[-800:]}") from None
    codes = dict(out.get("statusCodeDistribution") or {})
    for error, n in list((out.get("errorDistribution") or {}).items())[:3]:
        codes[error[:160]] = n
    latency_ms = {str(d.get("percentage")): float(d.get("latency", 0)) / 1e6
                  for d in out.get("latencyDistribution") or []}
    return {"rps": out.get("rps", 0.0), "count": out.get("count", 0), "codes": codes,
            "ok": codes.get("OK", 0), "p50_ms": latency_ms.get("50", 0.0), "p99_ms": latency_ms.get("99", 0.0),
            "errors": out.get("errorDistribution") or {}}


def http_get(url, timeout=5):
    """(status, body) of a GET; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError) as e:
        return 0, str(e)


def wait_for(predicate, timeout_s, interval_s=0.5):
    """Polls `predicate` until it returns a truthy value or `timeout_s` passes; returns its last
    value (so a caller can say what did not happen)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


def run(cmd, check=True, timeout=60, **kw):
    """Runs `cmd` (captured, text); raises RuntimeError naming it and its stderr when `check`
    and it fails."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {r.returncode}: {r.stderr.strip()}")
    return r


class Procs:
    """The processes a test started, each with its log file; stop() ends each of them (and only
    them): SIGTERM to its process group, then SIGKILL after `grace_s`."""

    def __init__(self, logdir, grace_s=20):
        self.logdir = Path(logdir)
        self.grace_s = grace_s
        self.procs = {}

    def start(self, name, argv, env=None):
        log = open(self.logdir / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs[name] = (p, log)
        return p

    def alive(self, name):
        return self.procs[name][0].poll() is None

    def log_tail(self, name, n=3000):
        return (self.logdir / f"{name}.log").read_text(errors="replace")[-n:]

    def stop(self):
        for p, _ in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for name, (p, log) in self.procs.items():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{name} ignored SIGTERM; killing it", flush=True)
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            log.close()
