"""The report of scripts/quality/quality.py: quality.md (tables a person reads) and quality.json (the
same facts for a program), with the command, commit, machine and tool versions that produced
them. Standard library only.
"""

import datetime
import json
import os
import subprocess

import stats as qs


def _out(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def metadata(root, args, command):
    """What a reader needs to reproduce the run."""
    dirty = _out(["git", "status", "--porcelain", "--untracked-files=no"], root)
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "commit": _out(["git", "rev-parse", "--short", "HEAD"], root) + (" (with local changes)" if dirty else ""),
        "mode": args.mode,
        "bytes": args.bytes,
        "dieharder_tests": args.dieharder_tests,
        "bin_dir": str(args.bin_dir),
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "tools": {pkg: _out(["dpkg-query", "-W", "-f", "${Version}", pkg]) or "?"
                  for pkg in ("ent", "rng-tools5", "dieharder")},
    }


def _verdict(stat):
    if stat.tool == "dieharder" and stat.note in ("PASSED", "WEAK", "FAILED"):
        if stat.note == "FAILED" and stat.ok:
            return "not judged"
        return {"PASSED": "pass", "WEAK": "pass (WEAK)", "FAILED": "**FAIL**"}[stat.note]
    return "pass" if stat.ok else "**FAIL**"


def _cell(text):
    return str(text).replace("|", "\\|")


THRESHOLDS = f"""\
## Thresholds

Each bound is computed for the sample's size N, so every run is judged alike. A bound is
crossed by truly random data with the probability given; about 2e-4 per system and run in all,
nearly all of it ent's chi-square figure.

- **ent, chi-square** (255 degrees of freedom): ent's "would exceed this value X percent of the
  times" must lie within {qs.CHI_PERCENT_LOW}%..{qs.CHI_PERCENT_HIGH}% (2e-4; ent prints nothing
  finer). Too uniform fails as well as too lumpy.
- **ent, entropy**: at least 8 - {qs.CHI_CRIT:.1f} / (2 N ln 2) bits per byte: the same bound seen
  in bits ({qs.CHI_CRIT:.1f} is the chi-square value at ent's upper 0.01% end).
- **ent, mean, Monte Carlo pi, serial correlation**: within +-{qs.Z_BOUND} standard deviations of
  the value for random bytes (6.8e-6 each): mean 127.5 with sd 73.9 / sqrt(N); pi from N / 6
  points, each inside w.p. pi/4, so sd(pi) = 4 sqrt((pi/4)(1 - pi/4) / (N/6)); serial
  correlation 0 with sd 1 / sqrt(N).
- **rngtest** (`rngtest -c BLOCKS`, BLOCKS = (N - 4) / 2500: the first 32 bits prime the
  continuous run test): at most k failed FIPS 140-2 blocks, k the smallest with
  P(Binomial(BLOCKS, {qs.RNGTEST_FALSE_FAIL_RATE}) > k) <= {qs.RNGTEST_ALPHA:g}. The rate
  {qs.RNGTEST_FALSE_FAIL_RATE:.2%} (a block in 1,250) was measured here: `head -c 200000000
  /dev/urandom | rngtest -c 80000` failed 64 of 79,999 blocks.
- **dieharder** (`entropy stream | dieharder -g 200 ...`): no test FAILED (p < 1e-6 or
  p > 1 - 1e-6, dieharder's own default, 2e-6 per result); WEAK (p < 0.005 or > 0.995, one
  result in 100 for a perfect generator) is reported and allowed. dieharder's manual warns it is
  a research tool: a WEAK is a test to repeat, not a defect. The tests it rates "Suspect"
  (`diehard_opso`, `diehard_oqso`, `diehard_dna`) or "Do Not Use" (`diehard_sums`), which
  `dieharder -a` runs all the same, are reported and not judged.

What this cannot see: a source that is a good pseudo-random generator passes all of it (the
simulator's bytes come from the OS RNG; nothing here tells quantum from pseudo-random bytes),
and one sample cannot show that bytes were never served twice to two callers (the
conformance and scale-out runs check that with `repeat-scan`).
"""


def write(out, meta, results, self_rows, seconds, check):
    """Writes out/quality.md and out/quality.json."""
    ok = check.all_ok()
    doc = {**meta, "ok": ok, "passed": check.passed, "failed": check.failed, "seconds": seconds,
           "self_check": self_rows,
           "systems": {name: {"description": r.get("description", ""), "stream_seconds": r.get("stream_seconds"),
                              "dieharder_seconds": r["dieharder_seconds"],
                              "stats": [s.as_dict() for s in r["stats"]]} for name, r in results.items()},
           "thresholds": {"z_bound": qs.Z_BOUND, "chi_percent": [qs.CHI_PERCENT_LOW, qs.CHI_PERCENT_HIGH],
                          "rngtest_false_fail_rate": qs.RNGTEST_FALSE_FAIL_RATE, "rngtest_alpha": qs.RNGTEST_ALPHA,
                          "dieharder": qs.DIEHARDER_THRESHOLD}}
    (out / "quality.json").write_text(json.dumps(doc, indent=2) + "\n")

    n = meta["bytes"]
    lines = [
        f"# Quality of the served bytes: {meta['mode']} run of {meta['date']}",
        "",
        f"**Verdict: {'PASS' if ok else 'FAIL'}** ({check.passed} checks passed, {check.failed} failed).",
        "",
        f"- Command: `{meta['command']}`",
        f"- Commit: `{meta['commit']}`; binaries: `{meta['bin_dir']}`",
        f"- Machine: {meta['cpus']} CPUs, load average {meta['load_average_start'][0]:.2f} at the start, "
        f"{meta['load_average_end'][0]:.2f} at the end",
        "- Tools (Debian): " + ", ".join(f"{k} {v}" for k, v in meta["tools"].items()),
        f"- ent and rngtest: {n:,} bytes ({n / (1 << 20):g} MiB) per system, from "
        f"`entropy stream --total {n}` into a file",
        "- dieharder: " + (", ".join("`-a`" if t == "all" else f"`-d {t}`" for t in meta["dieharder_tests"]) or "none")
        + ", each reading its own live `entropy stream | dieharder -g 200` until it has enough",
        "",
        "## Systems",
        "",
        "| system | what ran | stream of the sample | dieharder (s) |",
        "|---|---|---|---|",
    ]
    for name, r in results.items():
        secs = r.get("stream_seconds")
        rate = f"{secs:.1f} s, {n / secs / 1e6:.0f} MB/s" if secs else "-"
        dh = ", ".join(f"{'-a' if t == 'all' else t}: {s}" for t, s in r["dieharder_seconds"].items()) or "-"
        lines.append(f"| {name} | {_cell(r.get('description', ''))} | {rate} | {dh} |")
    lines += ["", "## Results", "", "| system | tool | statistic | value | threshold | verdict |",
              "|---|---|---|---|---|---|"]
    for name, r in results.items():
        for s in r["stats"]:
            lines.append(f"| {name} | {s.tool} | {_cell(s.statistic)} | {_cell(s.value)} | "
                         f"{_cell(s.threshold)} | "
                         f"{_verdict(s)} |")
    lines += ["", "## Self-check: the thresholds fail bad samples", "",
              f"{qs.SELF_CHECK_BYTES >> 20} MiB each, generated in Python with a fixed seed ({qs.SELF_CHECK_SEED}).", "",
              "| sample | tool | verdict | must fail | statistics that failed |", "|---|---|---|---|---|"]
    for row in self_rows:
        lines.append(f"| {_cell(row['sample'])} | {row['tool']} | {row['verdict']} | "
                     f"{'yes' if row['must_fail'] else 'no'} | {_cell(row['failed_statistics'])} |")
    lines += ["", THRESHOLDS, "## Times", "", "| phase | seconds |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in seconds.items()]
    (out / "quality.md").write_text("\n".join(lines) + "\n")
