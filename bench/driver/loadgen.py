"""Wrappers around the load generators: h2load (headline figures; `--h1` against the REST
baseline), ghz (what users run) and nghttp (the separate grpc-status check h2load needs). Each
returns a flat dict of results.

Kept because only this turns those tools' text output into the figures the report compares
(h2load does not read grpc-status, so the DATA frames it counts are checked here; ghz is what
users point at the service); the Rust grpc-load and ingest-load cover what these cannot."""

from __future__ import annotations

import json
import math
import re
import struct
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from stack import API_KEY, BIN, LOAD_CPU, BenchError, Rest

METHOD = "/entropy.v1.EntropyService/GetRandom"


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def grpc_frame(num_bytes: int, construction: int = 0) -> bytes:
    """A GetRandomRequest{num_bytes, construction} as one uncompressed gRPC message (5-byte
    prefix); construction 0 (RAW) is left out, as protobuf leaves out defaults."""
    msg = b"\x08" + varint(num_bytes)
    if construction:
        msg += b"\x20" + varint(construction)  # field 4, varint
    return b"\x00" + struct.pack(">I", len(msg)) + msg


def response_frame_bytes(num_bytes: int) -> int:
    """DATA bytes of a successful GetRandomResponse{data: num_bytes bytes}."""
    return 5 + 1 + len(varint(num_bytes)) + num_bytes


def grpc_headers(auth: bool) -> list[str]:
    h = ["-H", "content-type: application/grpc", "-H", "te: trailers"]
    if auth:
        h += ["-H", f"authorization: Bearer {API_KEY}"]
    return h


def frame_file(work: Path, num_bytes: int, construction: int = 0) -> Path:
    p = work / f"getrandom-{num_bytes}-{construction}.bin"
    if not p.exists():
        p.write_bytes(grpc_frame(num_bytes, construction))
    return p


def grpc_status_check(work: Path, addr: str, num_bytes: int, auth: bool = True) -> int:
    """Sends the h2load frame once with nghttp and returns the grpc-status trailer."""
    cmd = ["nghttp", "-v", "-d", str(frame_file(work, num_bytes))] + grpc_headers(auth) + \
          [f"http://{addr}{METHOD}"]
    p = subprocess.run(cmd, capture_output=True, timeout=30)
    m = re.search(rb"grpc-status: (\d+)", p.stdout)
    if not m:
        raise BenchError(f"nghttp saw no grpc-status from {addr}: {p.stdout[-300:]!r}")
    return int(m.group(1))


def percentiles_ms(durations_us: list[int]) -> dict:
    d = sorted(durations_us)
    if not d:
        return {}

    def pick(q: float) -> float:
        rank = max(1, math.ceil(q * len(d)))  # nearest rank
        return d[min(rank, len(d)) - 1] / 1000

    return {"p50_ms": pick(0.5), "p75_ms": pick(0.75), "p90_ms": pick(0.9),
            "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": d[-1] / 1000,
            "mean_ms": sum(d) / len(d) / 1000}


def run_h2load(raw: Path, tag: str, args: list[str], url: str) -> dict:
    """h2load on the load core: its summary plus percentiles from its per-request log (calls
    answered 200). `args` picks the protocol, load shape and duration."""
    log = raw / f"h2load-{tag}.log"
    cmd = LOAD_CPU + ["h2load", "-t", "1", "--log-file", str(log)] + args + [url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    (raw / f"h2load-{tag}.txt").write_text(p.stdout + p.stderr)
    out = p.stdout
    fin = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    codes = re.search(r"status codes: (\d+) 2xx", out)
    data = re.search(r"traffic: .*?([\d]+)\) data", out)
    if not (fin and req and codes and data):
        raise BenchError(f"h2load output not understood: {out[-500:]} {p.stderr[-300:]}")
    durations = []
    if log.exists():
        for line in log.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "200":
                durations.append(int(parts[2]))
        log.unlink()  # per-request logs are large; the percentiles are kept
    return {"duration_s": float(fin.group(1)) / (1000 if fin.group(2) == "ms" else 1),
            "rps": float(fin.group(3)), "done": int(req.group(3)), "succeeded": int(req.group(4)),
            "failed": int(req.group(5)) + int(req.group(6)) + int(req.group(7)),
            "status_2xx": int(codes.group(1)), "data_bytes": int(data.group(1)),
            "latency": percentiles_ms(durations)}


def h2load(work: Path, raw: Path, tag: str, addr: str, num_bytes: int, connections: int,
           streams: int, duration_s: float | None = None, requests: int | None = None,
           auth: bool = True, construction: int = 0) -> dict:
    """GetRandom(num_bytes) under h2load (gRPC over HTTP/2); `construction` 2 asks for DRBG
    output."""
    frame = frame_file(work, num_bytes, construction)
    args = ["-c", str(connections), "-m", str(streams), "-d", str(frame)]
    args += grpc_headers(auth)
    args += ["-D", str(duration_s)] if duration_s else ["-n", str(requests)]
    h = run_h2load(raw, tag, args, f"http://{addr}{METHOD}")
    succeeded, failed = h["succeeded"], h["failed"]
    expected = succeeded * response_frame_bytes(num_bytes)
    # h2load sees HTTP 200 even when grpc-status is not 0 (then no DATA comes back): the DATA
    # received over the DATA expected is the share of calls that really returned the bytes.
    grpc_ok = min(1.0, h["data_bytes"] / expected) if expected else 0.0
    return {"tool": "h2load", "num_bytes": num_bytes, "connections": connections,
            "streams_per_conn": streams, "in_flight": connections * streams,
            "duration_s": h["duration_s"], "requests": succeeded + failed, "ok": succeeded,
            "failed": failed, "grpc_ok_fraction": round(grpc_ok, 5), "rps": h["rps"],
            "bytes_per_s": h["rps"] * num_bytes,
            **h["latency"]}


def h2load_rest(raw: Path, tag: str, rest: Rest, num_bytes: int, connections: int,
                duration_s: float | None = None, requests: int | None = None) -> dict:
    """The REST baseline's GET under `h2load --h1`: one request at a time per connection, so
    `connections` calls in flight. A call counts when it is answered 2xx; the body bytes
    received must be those calls x `num_bytes` (`body_ok_fraction`)."""
    args = ["--h1", "-c", str(connections), "-H", f"authorization: Bearer {API_KEY}"]
    args += ["-D", str(duration_s)] if duration_s else ["-n", str(requests)]
    h = run_h2load(raw, tag, args, rest.url(num_bytes))
    ok = h["status_2xx"]
    failed = h["done"] - ok + h["failed"]
    # Answers still in flight when h2load stops can add up to one body per connection.
    expected = ok * num_bytes
    body_ok = min(1.0, h["data_bytes"] / expected) if expected else 0.0
    if h["data_bytes"] > (ok + connections) * num_bytes:
        body_ok = 0.0  # more bytes than calls: the bodies are not what was asked for
    return {"tool": "h2load --h1", "num_bytes": num_bytes, "connections": connections,
            "streams_per_conn": 1, "in_flight": connections, "duration_s": h["duration_s"],
            "requests": ok + failed, "ok": ok, "failed": failed,
            "body_ok_fraction": round(body_ok, 5), "rps": h["rps"],
            "bytes_per_s": h["rps"] * num_bytes,
            **h["latency"]}


def rest_check(rest: Rest, num_bytes: int) -> str | None:
    """One GET with the key and one without, checked as nghttp checks the gRPC frame: what is
    wrong, or None."""
    headers = {"authorization": f"Bearer {API_KEY}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(rest.url(num_bytes), headers=headers),
                                    timeout=10) as r:
            body, ctype = r.read(), r.headers.get("content-type")
    except OSError as e:
        return f"with the key: {e}"
    if len(body) != num_bytes or ctype != "application/octet-stream":
        return f"{num_bytes} B asked, {len(body)} B of {ctype} answered"
    try:
        urllib.request.urlopen(rest.url(num_bytes), timeout=10).close()
        return "a call without the key was answered"
    except urllib.error.HTTPError as e:
        return None if e.code == 401 else f"without the key: HTTP {e.code}, not 401"
    except OSError as e:
        return f"without the key: {e}"


def ghz(raw: Path, tag: str, addr: str, num_bytes: int, concurrency: int, connections: int,
        duration_s: float, auth: bool = True) -> dict:
    """GetRandom(num_bytes) under ghz (reflection, no .proto files)."""
    out = raw / f"ghz-{tag}.json"
    cmd = LOAD_CPU + ["ghz", "--insecure", "--call", "entropy.v1.EntropyService/GetRandom",
                      "-d", json.dumps({"num_bytes": num_bytes}), "-c", str(concurrency),
                      "--connections", str(connections), "-z", f"{duration_s}s",
                      "--format", "json", "-o", str(out)]
    if auth:
        cmd += ["--metadata", json.dumps({"authorization": f"Bearer {API_KEY}"})]
    cmd += [addr]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if not out.exists():
        raise BenchError(f"ghz wrote no report: {p.stderr[-500:]}")
    r = json.loads(out.read_text())
    r.pop("details", None)  # one entry per call: too big to keep
    out.write_text(json.dumps(r, indent=1))
    codes = r.get("statusCodeDistribution") or {}
    errors = r.get("errorDistribution") or {}
    ok = int(codes.get("OK", 0))
    # ghz cancels the calls in flight when its time is up and counts them as errors of its own
    # ("use of closed network connection", "the client connection is closing"): not the
    # server's failures, reported apart.
    closing = sum(v for k, v in errors.items() if "clos" in k.lower())
    failed = int(r.get("count", 0)) - ok - closing
    lat = {int(d["percentage"]): d["latency"] / 1e6 for d in r.get("latencyDistribution") or []}
    return {"tool": "ghz", "num_bytes": num_bytes, "connections": connections,
            "in_flight": concurrency, "duration_s": r.get("total", 0) / 1e9,
            "requests": r.get("count", 0), "ok": ok, "failed": max(0, failed),
            "cancelled_at_end": closing, "rps": r.get("rps", 0.0),
            "bytes_per_s": r.get("rps", 0.0) * num_bytes,
            "p50_ms": lat.get(50), "p75_ms": lat.get(75), "p90_ms": lat.get(90),
            "p95_ms": lat.get(95), "p99_ms": lat.get(99),
            "max_ms": r.get("slowest", 0) / 1e6, "mean_ms": r.get("average", 0) / 1e6,
            "errors": json.dumps(errors)[:300]}


def grpc_load(args: list[str], addr: str, timeout: float = 900) -> dict:
    from stack import run_json
    return run_json(LOAD_CPU + [str(BIN / "grpc-load"), "--addr", addr, "--key", API_KEY] + args,
                    timeout=timeout)
