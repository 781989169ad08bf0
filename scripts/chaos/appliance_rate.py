"""The appliance-rate load test of scripts/chaos/chaos.py: the original system's headline finding (its
burst test reached 81.5% success because its pool ran dry at the appliance's ~80 KB/s),
reproduced with ours. One simulator at 80 KB/s feeds the gateway (a 1 MiB pool, full at each
point's start, as the original's buffer was); ghz asks for 1 KiB as fast as it can at
concurrency 1, 10 and 50. What a ghz user sees is reported: success rate, status codes and
their messages, p50 and p99. Checked: a refused call consumed nothing (the bytes the gateway
counts as served are exactly 1 KiB per OK call), and callers waiting on an empty pool are
served in the order they came.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import harness
from readers import PYTHON
from system import System

APPLIANCE_RATE = 80_000  # bytes/s, a Quantis appliance
POOL = 1 << 20
SIZE = 1024
# The original's burst test (../shared/seeds, report 000): 30 s, 1 KiB, one client, no think time.
ORIGINAL = {"requests": 16_135, "ok": 13_148, "rps": 438.26, "p50_ms": 1.61, "p99_ms": 3.80}

# The witness of arrival order: the script drains the pool itself (what GetStatus reports), then
# a first caller asks for 64 KiB (0.8 s of the appliance's output), and five more arrive 30 ms
# apart asking for 8 KiB each (one collector chunk, made every 0.1 s). A pool that served
# whoever fits first would serve the small ones one chunk apart from their arrival, before the
# first; in arrival order, each small one waits behind the first and then behind the one before
# it, about one chunk apart, all within the gateway's 2 s max wait. Prints, in arrival order,
# when each was served (unix time) or its error code and message.
ORDER = """
import json, sys, threading, time
from entropy_diode import EntropyClient, EntropyError
endpoint, key, ca, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
done = [None] * (n + 1)
def call(i, c, size):
    try:
        c.get_bytes(size); done[i] = time.time()
    except EntropyError as e:
        done[i] = f"{e.code.name}: {e}"
with EntropyClient(endpoint, key, ca_file=ca, timeout=30) as c:
    held = c.status().pool_bytes
    while held > 0:
        c.get_bytes(min(held, 1 << 20)); held = c.status().pool_bytes
    threads = []
    for i in range(n + 1):
        t = threading.Thread(target=call, args=(i, c, 65536 if i == 0 else 8192)); t.start(); threads.append(t)
        time.sleep(0.03)
    for t in threads:
        t.join()
print(json.dumps(done))
"""


def ghz_for(s: System, seconds: float, concurrency: int) -> dict:
    cmd = harness.ghz_getrandom(s.key, s.ca, SIZE, "-z", f"{seconds}s", "-c", concurrency, "--connections", 1,
                                s.endpoint)
    r = subprocess.run([str(x) for x in cmd], capture_output=True, text=True, timeout=seconds + 120)
    return harness.ghz_summary(r.stdout, r.stderr)


def run(bin_dir: Path, work: Path, quick: bool, check: harness.Checks) -> dict:
    work.mkdir()
    # 8 KiB chunks, as the original's collector fetched (8 KB every ~100 ms at this rate).
    s = System(bin_dir, work, sim_rate=APPLIANCE_RATE, pool_bytes=POOL, chunk_bytes=8192)
    points = [10] if quick else [1, 10, 50]
    seconds = 3 if quick else 30
    results: dict = {"appliance_rate": APPLIANCE_RATE, "pool": POOL, "size": SIZE, "seconds": seconds,
                     "points": [], "original": ORIGINAL}
    try:
        s.start()
        for c in points:
            s.wait(s.pool_at_least(POOL - 65536), 60, "the pool full")
            served = s.metric("gateway", "entropy_gateway_served_bytes_total") or 0
            g = ghz_for(s, seconds, c)
            served = (s.metric("gateway", "entropy_gateway_served_bytes_total") or 0) - served
            point = {"concurrency": c, "count": g["count"], "ok": g["ok"], "rps": g["rps"], "p50_ms": g["p50_ms"],
                     "p99_ms": g["p99_ms"], "codes": g["codes"], "served_bytes": served,
                     "cut_at_end": cut_at_end(g["codes"])}
            results["points"].append(point)
            print(f"  c={c}: {g['ok']}/{g['count']} OK ({100 * g['ok'] / max(1, g['count']):.1f}%), "
                  f"{g['rps']:.0f} req/s, p50 {g['p50_ms']:.2f} ms, p99 {g['p99_ms']:.2f} ms, codes {g['codes']}",
                  flush=True)
            check(f"appliance rate, c={c}: a refused call consumed nothing ({served:.0f} bytes served "
                  f"for {g['ok']} OK calls of {SIZE})", served == g["ok"] * SIZE, g["codes"])
        # Callers on an empty pool (the script drains it), six arriving 30 ms apart.
        r = subprocess.run([str(PYTHON), "-c", ORDER, s.endpoint, s.key, str(s.ca), "5"], capture_output=True,
                           text=True, timeout=120)
        try:
            done = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            done = [r.stderr[-300:]]
        results["order"] = done
        in_order = all(isinstance(t, float) for t in done) and done == sorted(done)
        results["order_gaps_ms"] = [round(1000 * (b - a)) for a, b in zip(done, done[1:])] if in_order else []
        check("callers waiting on an empty pool are served in the order they came (five 8 KiB callers "
              "behind one of 64 KiB)", in_order and len(done) == 6, done)
    finally:
        s.stop()
    return results


def cut_at_end(codes: dict[str, int]) -> int:
    """Calls ghz itself cut when its duration ended (it closes the connection under them)."""
    return sum(v for k, v in codes.items() if k.startswith("rpc error") and
               ("closed network connection" in k or "transport is closing" in k or "connection is closing" in k))


def markdown(results: dict) -> list[str]:
    o = results["original"]
    lines = ["", "## The appliance-rate load test", "",
             f"One simulator at {results['appliance_rate'] / 1000:.0f} KB/s feeds the gateway (a "
             f"{results['pool'] >> 20} MiB pool, full at each point's start); ghz asks for "
             f"{results['size']} B as fast as it can for {results['seconds']} s on one connection. "
             "The original's burst test (seed report 000: 30 s, 1 KiB, one client) for comparison.", "",
             "| system | concurrency | calls | OK | success | req/s | p50 ms | p99 ms | refusals (code: count) |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| original (REST) | 1 | {o['requests']:,} | {o['ok']:,} | {100 * o['ok'] / o['requests']:.1f}% | "
             f"{o['rps']:.0f} | {o['p50_ms']:.2f} | {o['p99_ms']:.2f} | 2,987 failed: buffer empty |"]
    for p in results["points"]:
        refusals = ", ".join(f"{k}: {v}" for k, v in p["codes"].items()
                             if k != "OK" and not k.startswith("rpc error")) or "none"
        cut = cut_at_end(p["codes"])
        if cut:
            refusals += f" ({cut} of them cut by ghz closing its connection at the end, calls waiting)"
        lines.append(f"| Entropy Diode | {p['concurrency']} | {p['count']:,} | {p['ok']:,} | "
                     f"{100 * p['ok'] / max(1, p['count']):.1f}% | {p['rps']:.0f} | {p['p50_ms']:.2f} | "
                     f"{p['p99_ms']:.2f} | {refusals} |")
    lines += ["", f"Bytes the gateway counted as served equal 1 KiB per OK call at every point: a refused "
              f"call consumed nothing. On a drained pool (one 8 KiB chunk every 0.1 s), a caller asking for 64 KiB "
              f"and then five asking for 8 KiB, arriving 30 ms apart, were served in arrival order: the "
              f"small ones behind the large one, though each would have fitted first. Gaps between "
              f"completions (ms): {results.get('order_gaps_ms')}."]
    return lines
