"""The statistics of scripts/quality/quality.py: run ent, rngtest and dieharder, parse what they print,
and judge it against bounds stated here, each with the rate at which truly random data would
cross it (the false-alarm rate). Also the deliberately bad samples the thresholds must fail.

Every bound depends on the sample size N, so a 32 MiB sample and a 1 GiB sample are judged
alike. False alarms per system and run: about 2e-4 (ent's chi-square figure, the finest ent
prints), plus ~7e-6 for each of mean, Monte Carlo pi and serial correlation, 1e-6 for rngtest
and 2e-6 for each dieharder result.

Standard library only.
"""

import math
import random
import re
import subprocess
from dataclasses import asdict, dataclass
from statistics import NormalDist

# Mean, Monte Carlo pi and serial correlation are each close to normal for N in the MiB: random
# data lands outside +-4.5 standard deviations with probability 6.8e-6.
Z_BOUND = 4.5
# ent prints the chi-square tail probability with two decimals, and "less than 0.01" or "more
# than than 99.99" (sic) beyond: those ends are the finest bound it offers (2e-4 in all). Too
# uniform (above 99.99%) is as suspicious as too lumpy: a counter would be.
CHI_PERCENT_LOW, CHI_PERCENT_HIGH = 0.01, 99.99
CHI_DOF = 255
# ent's entropy is the chi-square seen in bits: for N bytes, 8 - entropy ~= chi2 / (2 N ln 2).
# The entropy bound is the chi-square value ent's upper 0.01% end stands for (Wilson-Hilferty).
CHI_CRIT = CHI_DOF * (1 - 2 / (9 * CHI_DOF)
                      + NormalDist().inv_cdf(1 - CHI_PERCENT_LOW / 100) * math.sqrt(2 / (9 * CHI_DOF))) ** 3

# rngtest's FIPS 140-2 tests fail some blocks of truly random data. Measured here on 2026-11-23:
#   head -c 200000000 /dev/urandom | rngtest -c 80000
# tested 79,999 blocks (the first 32 bits only prime the continuous run test) and failed 64
# (monobit 5, poker 8, runs 31, long run 21, continuous run 0): 0.080%, one block in 1,250.
RNGTEST_FALSE_FAIL_RATE = 0.0008
# The most failures allowed: random data at that rate exceeds it with probability <= 1e-6
# (binomial tail). A P(1) = 0.51 bias fails ~15% of blocks, a stuck bit all of them.
RNGTEST_ALPHA = 1e-6
RNGTEST_BLOCK_BYTES = 2500
RNGTEST_PRIME_BYTES = 4

# dieharder's own assessment (its -W and -X defaults): WEAK when a test's final p-value is below
# 0.005 or above 0.995, FAILED below 1e-6 or above 1 - 1e-6. FAILED fails the suite; WEAK is
# reported (one result in 100 is WEAK for a perfect generator).
DIEHARDER_THRESHOLD = "not FAILED (p < 1e-6 or > 1 - 1e-6); WEAK allowed"
# Tests `dieharder -l` itself rates "Suspect" (opso, oqso, dna) or "Do Not Use" (sums), which
# `dieharder -a` runs all the same: their results are reported, never judged.
DIEHARDER_UNRELIABLE = {"diehard_opso", "diehard_oqso", "diehard_dna", "diehard_sums"}


@dataclass
class Stat:
    """One judged statistic: what was measured, the bound, and whether it held."""

    tool: str
    statistic: str
    value: str
    threshold: str
    ok: bool
    note: str = ""

    def as_dict(self):
        return asdict(self)


def tool_ok(stats):
    """A tool's verdict on a sample: every statistic it produced held (and it produced some)."""
    return bool(stats) and all(s.ok for s in stats)


# --- ent ---------------------------------------------------------------------------------

ENT_RE = {
    "entropy": re.compile(r"Entropy = ([\d.]+) bits per byte"),
    "chi": re.compile(r"Chi square distribution for (\d+) samples is ([\d.]+), and randomly\s+"
                      r"would exceed this value (less than |more than (?:than )?)?([\d.]+) percent"),
    "mean": re.compile(r"Arithmetic mean value of data bytes is ([\d.]+)"),
    "pi": re.compile(r"Monte Carlo value for Pi is ([\d.]+) \(error ([\d.]+) percent\)"),
    "serial": re.compile(r"Serial correlation coefficient is (-?[\d.]+|undefined)"),
}


def ent(path, n):
    """Runs ent on the N-byte file `path`; returns (stats, raw output)."""
    out = subprocess.run(["ent", str(path)], capture_output=True, text=True, timeout=600, check=True).stdout
    return ent_judge(out, n), out


def ent_judge(out, n):
    """Judges ent's report of an N-byte sample."""
    m = {k: r.search(out) for k, r in ENT_RE.items()}
    missing = [k for k, v in m.items() if v is None]
    if missing:
        return [Stat("ent", "report", "unparsed: " + ", ".join(missing), "all five statistics", False)]
    stats = []

    chi_n, chi, qualifier, percent = int(m["chi"][1]), float(m["chi"][2]), m["chi"][3], float(m["chi"][4])
    stats.append(Stat("ent", "sample size", f"{chi_n:,} bytes", f"{n:,} bytes", chi_n == n))

    deficit = CHI_CRIT / (2 * n * math.log(2))
    entropy_min = 8 - deficit - 1e-6  # ent prints six decimals
    entropy = float(m["entropy"][1])
    stats.append(Stat("ent", "entropy (bits/byte)", f"{entropy:.6f}", f">= {entropy_min:.7f}", entropy >= entropy_min))

    shown = f"{chi:.2f}, exceeded {(qualifier or '').strip()} {percent:.2f}% of the time".replace("  ", " ")
    stats.append(Stat("ent", "chi-square (255 dof)", shown,
                      f"{CHI_PERCENT_LOW}% <= exceeded <= {CHI_PERCENT_HIGH}%", not qualifier))

    mean = float(m["mean"][1])
    mean_bound = Z_BOUND * math.sqrt((256 ** 2 - 1) / 12 / n) + 5e-5  # four decimals printed
    stats.append(Stat("ent", "arithmetic mean", f"{mean:.4f}", f"127.5 +- {mean_bound:.4f}",
                      abs(mean - 127.5) <= mean_bound))

    # ent draws one point per 6 bytes (24-bit x and y); a point falls in the circle w.p. pi/4.
    points = n // 6
    p = math.pi / 4
    pi_hat = float(m["pi"][1])
    pi_err = 100 * abs(pi_hat - math.pi) / math.pi
    pi_bound = 100 * Z_BOUND * 4 * math.sqrt(p * (1 - p) / points) / math.pi
    stats.append(Stat("ent", "Monte Carlo pi error (%)", f"{pi_err:.4f} (pi = {pi_hat:.9f})",
                      f"<= {pi_bound:.4f}", pi_err <= pi_bound))

    serial_text = m["serial"][1]
    serial_bound = Z_BOUND / math.sqrt(n) + 5e-7  # six decimals printed
    serial_ok = serial_text != "undefined" and abs(float(serial_text)) <= serial_bound
    stats.append(Stat("ent", "serial correlation", serial_text, f"|r| <= {serial_bound:.6f}", serial_ok))
    return stats


# --- rngtest -----------------------------------------------------------------------------

def rngtest_blocks(n):
    """FIPS 140-2 blocks rngtest can test in N bytes."""
    return (n - RNGTEST_PRIME_BYTES) // RNGTEST_BLOCK_BYTES


def binomial_upper(n, p, alpha):
    """The smallest k with P(Bin(n, p) > k) <= alpha (terms summed in log space)."""
    log_p, log_q = math.log(p), math.log1p(-p)
    cdf = 0.0
    for k in range(n + 1):
        cdf += math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                        + k * log_p + (n - k) * log_q)
        if 1 - cdf <= alpha:
            return k
    return n


def rngtest(path, n):
    """Runs `rngtest -c BLOCKS` on the N-byte file `path`; returns (stats, raw output)."""
    blocks = rngtest_blocks(n)
    with open(path, "rb") as f:
        # rngtest exits 1 when any block failed, which random data does: judged below instead.
        r = subprocess.run(["rngtest", "-c", str(blocks)], stdin=f, capture_output=True, text=True, timeout=1800)
    return rngtest_judge(r.stderr, blocks), r.stderr


def rngtest_judge(out, blocks):
    """Judges rngtest's report (it writes it on stderr) of `blocks` blocks."""
    ok_m = re.search(r"FIPS 140-2 successes: (\d+)", out)
    fail_m = re.search(r"FIPS 140-2 failures: (\d+)", out)
    if not ok_m or not fail_m:
        return [Stat("rngtest", "report", "unparsed", "successes and failures", False, out.strip()[-300:])]
    successes, failures = int(ok_m[1]), int(fail_m[1])
    per_test = dict(re.findall(r"FIPS 140-2\(2001-10-10\) ([\w ]+): (\d+)", out))
    detail = ", ".join(f"{name.lower()} {count}" for name, count in per_test.items())
    limit = binomial_upper(blocks, RNGTEST_FALSE_FAIL_RATE, RNGTEST_ALPHA)
    expected = blocks * RNGTEST_FALSE_FAIL_RATE
    return [
        Stat("rngtest", "blocks tested", f"{successes + failures:,}", f"{blocks:,}", successes + failures == blocks),
        Stat("rngtest", "FIPS 140-2 failed blocks", f"{failures:,} ({detail})",
             f"<= {limit} (random data: {expected:.1f} expected at {RNGTEST_FALSE_FAIL_RATE:.2%}, "
             f"P(more) <= {RNGTEST_ALPHA:g})", failures <= limit),
    ]


# --- dieharder ---------------------------------------------------------------------------

DIEHARDER_ROW = re.compile(r"^\s*(\w+)\|\s*(\d+)\|\s*(\d+)\|\s*(\d+)\|\s*([\d.]+)\|\s*(PASSED|WEAK|FAILED)\s*$")


def dieharder_judge(out):
    """One Stat per result line of dieharder's report; a stdin that ran dry is a failure (the
    test would otherwise have read a truncated or rewound stream)."""
    stats, seen = [], {}
    for line in out.splitlines():
        m = DIEHARDER_ROW.match(line)
        if m:
            name, ntup, tsamples, psamples, pvalue, assessment = m.groups()
            label = f"{name} (ntup {ntup}, {tsamples} x {psamples})"
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:  # some tests report more than one p-value (runs: up and down)
                label += f" #{seen[label]}"
            if name in DIEHARDER_UNRELIABLE:
                stats.append(Stat("dieharder", label, f"p = {pvalue}, {assessment}",
                                  "none: dieharder rates this test unreliable", True, assessment))
            else:
                stats.append(Stat("dieharder", label, f"p = {pvalue}, {assessment}",
                                  DIEHARDER_THRESHOLD, assessment != "FAILED", assessment))
    if "Error: EOF" in out or not stats:
        stats.append(Stat("dieharder", "input", "stdin ran dry" if "Error: EOF" in out else "no result line",
                          "a live stream that outlasts the test", False, out.strip()[-300:]))
    return stats


def dieharder_rate(out):
    """dieharder's read speed from its header (32-bit words per second), or None."""
    m = re.search(r"stdin_input_raw\|\s*([\d.e+]+)\s*\|", out)
    return float(m[1]) if m else None


# --- the self-check's samples ------------------------------------------------------------

SELF_CHECK_SEED = 20261123
SELF_CHECK_BYTES = 4 << 20


def bad_samples(n=SELF_CHECK_BYTES, seed=SELF_CHECK_SEED):
    """(id, name, bytes, tools that must fail it) for each deliberately bad N-byte sample.
    Seeded, so every run judges the same bytes."""
    r = random.Random(seed)
    # Independent bits with P(1) = 0.51, drawn a byte at a time from the byte distribution
    # they imply (weight of a byte: 0.51^ones * 0.49^zeros).
    weights = [0.51 ** bin(b).count("1") * 0.49 ** (8 - bin(b).count("1")) for b in range(256)]
    biased = bytes(r.choices(range(256), weights=weights, k=n))
    yield "biased", "biased: every bit 1 with probability 0.51", biased, {"ent", "rngtest"}
    stuck = r.randbytes(n).translate(bytes(b | 1 for b in range(256)))
    yield "stuck-bit", "stuck bit: the lowest bit of every byte is 1", stuck, {"ent", "rngtest"}
    # A pool serving one block again and again. rngtest looks at 2,500-byte blocks and the
    # 32-bit words either side of one, so it cannot see a repeat 64 KiB apart: only ent must fail.
    block = r.randbytes(64 << 10)
    replayed = (block * (n // len(block) + 1))[:n]
    yield "replayed", "replayed: one 64 KiB block over and over", replayed, {"ent"}
