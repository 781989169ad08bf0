"""scripts/chaos/chaos.py's results as the Markdown kept in bench/results/: one line a fault (what was
expected, what the clients and the programs showed, recovery, verdict), then the checks over
the whole run and the resources."""

from __future__ import annotations

import time

from load import READ_TOTAL


def _s(x: float | None) -> str:
    return "never" if x is None else f"{x:.1f} s"


def _observed(r: dict) -> str:
    readers = r.get("readers", {})
    parts = []
    if readers:
        exact = sum(1 for v in readers.values() if v.get("code") == "OK" and v.get("wrote") == v.get("bytes"))
        reconnects = sum(int(v.get("reconnects", 0)) for v in readers.values())
        parts.append(f"{exact}/{len(readers)} readers exact, {reconnects} reconnects")
        if r.get("sent_whole_before_fault"):
            parts.append(f"{r['sent_whole_before_fault']} stream(s) sent whole before the fault")
    codes = r["recovery"]["codes"]
    parts.append("drawer " + ", ".join(f"{k} {v}" for k, v in sorted(codes.items())))
    notes = r.get("notes", {})
    for key in ("exit_s", "health_failures", "fetch_errors", "resealed_while_full", "readyz"):
        if key in notes:
            parts.append(f"{key} {notes[key]}")
    if "rejected" in notes:
        parts.append("rejected " + ", ".join(f"{k.split('reason=')[-1].rstrip('}')} {v:.0f}"
                                             for k, v in notes["rejected"].items()))
    for key in ("burst", "spike"):
        if key in notes:
            runs = notes[key] if key == "spike" else {"burst": notes[key]}
            parts.append(key + " " + "; ".join(
                f"c={n}: {g['ok']}/{g['count']} OK {', '.join(f'{c} {k}' for c, k in g['codes'].items() if c != 'OK')}"
                for n, g in runs.items()))
    return "; ".join(parts)


def _mib(kib: int | None) -> str:
    return "-" if not kib else f"{kib / 1024:.0f}"


def markdown(results: dict, command: str, target_s: float) -> str:
    lines = [f"# Chaos ({time.strftime('%Y-%m-%d')}, {results['mode']})", "",
             f"Command: `{command}`", "",
             f"One simulator -> collector -> toxiproxy -> gateway <- toxiproxy <- clients, on loopback. "
             f"Lasting faults hold {results['hold_s']:.0f} s. Through every row: the stream readers of "
             f"{', '.join(results['languages'])} ({READ_TOTAL >> 20} MiB each, paced) and a unary drawer (GetRandom 4096 B "
             "every 10 ms). Recovery: from the fault's end to the drawer's first OK call, and to its first "
             f"second back at 80% of its rate before; target {target_s:.0f} s.", "",
             "| fault | expected | observed | first OK | full rate | verdict |", "|---|---|---|---|---|---|"]
    for r in results["rows"]:
        rec = r["recovery"]
        met = rec["first_ok_s"] is not None and rec["first_ok_s"] <= target_s and \
            rec["full_rate_s"] is not None and rec["full_rate_s"] <= target_s
        verdict = "FAIL: " + "; ".join(r["failures"]) if r["failures"] else ("pass" if met else "pass, recovery over target")
        lines.append(f"| {r['row']} | {r['expected']} | {_observed(r)} | {_s(rec['first_ok_s'])} | "
                     f"{_s(rec['full_rate_s'])} | {verdict} |")
    final = results.get("final", {})
    lines += ["", "## Over the whole run", "",
              f"- Scanned {final.get('scanned_bytes', 0) / (1 << 20):.0f} MiB received by every client in every row "
              "for any run of 16+ bytes served twice (`repeat-scan`).",
              f"- Chunks stored by the gateway over all its lives: {final.get('stored_chunks')}, "
              f"stored twice: {final.get('stored_twice')}.",
              f"- Error-level log lines: {final.get('error_lines')}."]
    for program, examples in (final.get("error_examples") or {}).items():
        for e in examples:
            lines.append(f"  - {program}: `{e[:200]}`")
    lines += ["", "## Resources (RSS MiB / FDs / threads: before, during, after)", "",
              "| fault | gateway | collector |", "|---|---|---|"]
    for r in results["rows"]:
        cells = []
        for program in ("gateway", "collector"):
            cells.append(" -> ".join(
                f"{_mib(r['resources'][w].get(program, {}).get('rss_kib'))}/"
                f"{r['resources'][w].get(program, {}).get('fds', '-')}/"
                f"{r['resources'][w].get(program, {}).get('threads', '-')}"
                for w in ("before", "during", "after")))
        lines.append(f"| {r['row']} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"
