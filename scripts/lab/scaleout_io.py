"""What scripts/lab/scaleout.py talks to and writes, apart from the programs it runs: HAProxy's
runtime API, /proc CPU times, two small programs it runs in the client's
namespace (a metrics fetch and a drawer that keeps the bytes it draws), and its Markdown report.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

FETCH = ("import sys, urllib.request\ntry:\n r = urllib.request.urlopen(sys.argv[1], timeout=3)\n"
         " sys.stdout.write(r.read().decode())\nexcept Exception as e:\n"
         " sys.stdout.write(getattr(e, 'code', 0) and e.read().decode() or ''); sys.exit(3)\n")
DRAWER = """
import sys, time
from entropy_diode import EntropyClient, EntropyError
endpoint, key, ca, out, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
ok, failed = 0, {}
with EntropyClient(endpoint, key, ca_file=ca, timeout=5) as c, open(out, "ab") as f:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            f.write(c.get_bytes(4096)); ok += 1
        except EntropyError as e:
            failed[e.code.name] = failed.get(e.code.name, 0) + 1
        time.sleep(0.01)
print(ok, sum(failed.values()), sorted(failed.items()))
"""


def haproxy_command(sock: Path, command: str) -> str:
    """One runtime-API command on HAProxy's stats socket; "" when it is not up."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        try:
            s.connect(str(sock))
        except OSError:
            return ""
        s.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def haproxy_stat(text: str) -> list[dict[str, str]]:
    """`show stat` CSV as one dict a row."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].lstrip("# ").split(",")
    return [dict(zip(header, line.split(","))) for line in lines[1:]]


def markdown(results: dict, command: str) -> str:
    """The numbers of a run as the Markdown kept in bench/results/."""
    t = results.get("throughput", {})
    lines = [f"# Scaled out: HAProxy before 1 to 3 gateways ({time.strftime('%Y-%m-%d')})", "",
             f"Command: `{command}`", "",
             f"Each gateway capped at {results.get('gateway_cpu')} core by a cgroup "
             f"({'applied' if t.get('capped') else 'NOT applied: no cgroup here'}); HAProxy, ghz, "
             "the collectors and the simulators share the rest of the machine's 2 cores. "
             f"ghz: GetRandom 32 B over TLS, {t.get('calls')} calls a point, 50 in flight on 10 "
             "connections. One run; the machine is shared, so read ratios, not absolutes.", "",
             "Gateway cores: the CPU of all three gateways (those out of rotation still take chunks "
             "from the collectors).", "",
             "| gateways in rotation | req/s | p99 ms | HAProxy cores | gateway cores | req/s per gateway core |",
             "|---|---|---|---|---|---|"]
    for p in t.get("points", []):
        per_core = p["rps"] / p["gateway_cores"] if p.get("gateway_cores") else 0
        lines.append(f"| {p['gateways']} | {p['rps']:,.0f} | {p['p99_ms']:.2f} | {p['lb_cores']:.2f} | "
                     f"{p['gateway_cores']:.2f} | {per_core:,.0f} |")
    lines.append(f"| 1, direct (no balancer) | {t.get('direct_one_gateway_rps', 0):,.0f} | "
                 f"{t.get('direct_p99_ms', 0):.2f} | - | - | - |")
    k, d = results.get("kill", {}), results.get("drain", {})
    lines += ["", "Faults in the same run:", "",
              f"- kill -9 of {k.get('victim')} carrying {k.get('streams', 0):.0f} streams: every reader "
              f"resumed ({k.get('reconnects')} reconnects in all); the unary drawer: {k.get('drawer_ok')} OK, "
              f"{k.get('drawer_failed')} failed.",
              f"- SIGTERM to {d.get('victim')}: out of rotation after {d.get('out_of_rotation_s') or 0:.1f} s, exited "
              f"after {d.get('exited_s', 0):.1f} s; ghz {d.get('ghz_ok')} of {d.get('ghz_calls')} OK; "
              f"drawer {d.get('drawer_ok')} OK, {d.get('drawer_failed')} failed.",
              f"- {results.get('scanned_bytes', 0) / (1 << 20):.0f} MiB received in all, no run of 16+ "
              "bytes served twice.", ""]
    return "\n".join(lines)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of `pid` and its threads, from /proc (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
