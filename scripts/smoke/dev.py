#!/usr/bin/env python3
"""Smoke test of `entropy-gateway --dev` as a user meets it: start the binary, call it with
grpcurl through server reflection (no .proto files), run every grpcurl and ghz recipe of
README.md as written, then stop it with SIGTERM and expect a clean exit.

Usage: scripts/smoke/dev.py PATH_TO_ENTROPY_GATEWAY
"""
import base64
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, free_port, http_get, wait_for  # noqa: E402

KEY = "smoke-test-key-" + os.urandom(8).hex()
check = harness.Checks()


def grpcurl(addr, method, key=KEY, data=None):
    """grpcurl with the test key by default, errors as JSON (see error_code)."""
    return harness.grpcurl(addr, method, key=key, data=data, extra=["-format-error"])


def error_code(result):
    """The gRPC status code of a failed grpcurl call (-format-error prints it as JSON on stderr)."""
    if result.returncode == 0:
        return 0
    try:
        return json.loads(result.stderr)["code"]
    except (ValueError, KeyError):
        return None


def messages(stdout):
    """grpcurl prints one JSON object per message, pretty-printed back to back."""
    decoder, out, i = json.JSONDecoder(), [], 0
    text = stdout.strip()
    while i < len(text):
        obj, end = decoder.raw_decode(text, i)
        out.append(obj)
        i = end
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def readme_recipes(marker_text="<!-- smoke: grpcurl recipes", tool="grpcurl"):
    """`tool` command lines from the README block after the given marker comment."""
    readme = (ROOT / "README.md").read_text()
    marker = readme.index(marker_text)
    block = re.search(r"```(?:sh|bash)\n(.*?)```", readme[marker:], re.S).group(1)
    lines, current = [], ""
    for line in block.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        current += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            lines.append(current.strip())
            current = ""
    return [l for l in lines if l.startswith(tool + " ")]


def ghz_all_ok(output):
    """ghz exits 0 whatever its calls returned: every line of its status code distribution must
    be [OK], and it must print no error distribution."""
    if "Status code distribution:" not in output or "Error distribution:" in output:
        return False
    tail = output.split("Status code distribution:", 1)[1]
    codes = [l.strip() for l in tail.splitlines() if l.strip().startswith("[")]
    return bool(codes) and all(c.startswith("[OK]") for c in codes)


def config_errors(binary):
    """Bad config exits 64 before binding, naming the key; good key files start a gateway."""
    cases = [
        (["--dev", "--pool-capacity-bytes", "5"], {}, "pool_capacity_bytes"),
        (["--dev"], {"ENTROPY_MAX_WAIT_MS": "soon"}, "ENTROPY_MAX_WAIT_MS"),
        (["--dev", "--listen-addr", "nowhere"], {}, "--listen-addr"),
        # Dev mode is plaintext and prints its key: never on a non-loopback address unasked.
        (["--dev", "--listen-addr", f"0.0.0.0:{free_port()}"], {}, "--dev-listen-any"),
        ([], {}, "gateway_id"),
        (["--gateway-id", "smoke"], {}, "api_keys_file"),
    ]
    for args, extra_env, named in cases:
        env = dict(os.environ, **extra_env)
        r = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=30)
        check(f"bad config {args or 'no keys'} {extra_env or ''} exits 64 naming {named}",
              r.returncode == 64 and named in r.stderr, f"exit {r.returncode}: {r.stderr}")

    # Connection caps must fit the descriptor limit: checked at start, before binding.
    if shutil.which("prlimit"):
        r = subprocess.run(["prlimit", "--nofile=512:512", binary, "--dev", "--max-connections", "5000",
                            "--listen-addr", f"127.0.0.1:{free_port()}"],
                           capture_output=True, text=True, timeout=30)
        check("max_connections past the descriptor limit exits 64 naming it and the limit",
              r.returncode == 64 and "max_connections" in r.stderr and "512" in r.stderr,
              f"exit {r.returncode}: {r.stderr}")

    # Production mode from key files: starts, serves health and reflection, and (with no
    # collector feeding it) reports NOT_SERVING until entropy arrives.
    import hashlib
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        secret = "prod-" + os.urandom(8).hex()
        keys = Path(tmp, "api-keys.toml")
        keys.write_text(f'[[key]]\nname = "smoke"\nsha256 = "{hashlib.sha256(secret.encode()).hexdigest()}"\n')
        mac_dir = Path(tmp, "mac")
        mac_dir.mkdir()
        (mac_dir / "k1.key").write_text(os.urandom(32).hex() + "\n")
        addr, ingest = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        state = Path(tmp, "state")
        prod = [binary, "--gateway-id", "smoke", "--api-keys-file", str(keys), "--ingest-keys-dir", str(mac_dir),
                "--listen-addr", addr, "--ingest-listen-addr", ingest, "--max-wait-ms", "100",
                "--metrics-listen-addr", ""]

        # The ingest lease (state_dir): a directory that cannot be created exits 64 naming the
        # key; a lease file that does not parse exits 65 naming the file; both before binding.
        r = subprocess.run([*prod, "--state-dir", str(keys / "state")], capture_output=True, text=True, timeout=30)
        check("a state_dir that cannot be created exits 64 naming state_dir",
              r.returncode == 64 and "state_dir" in r.stderr, f"exit {r.returncode}: {r.stderr}")
        torn = Path(tmp, "torn-state")
        torn.mkdir()
        (torn / "ingest-lease").write_text("entropy-gateway ingest lease v1\naccepted_until_unix_ms 17")
        r = subprocess.run([*prod, "--state-dir", str(torn)], capture_output=True, text=True, timeout=30)
        check("a torn ingest lease exits 65 naming the file, and is left as it was",
              r.returncode == 65 and str(torn / "ingest-lease") in r.stderr
              and (torn / "ingest-lease").read_text().endswith("unix_ms 17"),
              f"exit {r.returncode}: {r.stderr}")

        proc = subprocess.Popen([*prod, "--state-dir", str(state)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            r = None
            for _ in range(50):
                r = grpcurl(addr, "grpc.health.v1.Health/Check", key=None)
                if r.returncode == 0:
                    break
                time.sleep(0.1)
            check("key-file gateway starts NOT_SERVING with an empty pool",
                  r.returncode == 0 and "NOT_SERVING" in r.stdout, r.stdout + r.stderr)
            check("its ingest lease is on disk before any chunk", (state / "ingest-lease").is_file(),
                  str(sorted(p.name for p in state.iterdir())) if state.is_dir() else "no state_dir")
            other = [*prod, "--state-dir", str(state)]
            other[other.index("--listen-addr") + 1] = f"127.0.0.1:{free_port()}"
            other[other.index("--ingest-listen-addr") + 1] = f"127.0.0.1:{free_port()}"
            r = subprocess.run(other, capture_output=True, text=True, timeout=30)
            check("a second gateway on the same state_dir exits 64: one process per lease",
                  r.returncode == 64 and "in use by another gateway" in r.stderr, f"exit {r.returncode}: {r.stderr}")
            r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 8}, key=secret)
            check("key-file gateway: valid key, empty pool is UNAVAILABLE", error_code(r) == 14, r.stderr)
            r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 8}, key="prod-wrong")
            check("key-file gateway: wrong key is UNAUTHENTICATED", error_code(r) == 16, r.stderr)

            # keygen prints a secret and an entry; SIGHUP swaps the keys without a restart.
            r = subprocess.run([binary, "keygen", "--name", "rotated"], capture_output=True, text=True, timeout=30)
            new_secret = r.stdout.strip()
            entry = r.stderr[r.stderr.index("[[key]]"):] if "[[key]]" in r.stderr else ""
            check("keygen prints a secret and a keys-file entry without it",
                  r.returncode == 0 and new_secret.startswith("edk_") and new_secret not in entry and "sha256" in entry,
                  r.stdout + r.stderr)
            keys.write_text(entry)
            proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 8}, key=new_secret)
            check("after SIGHUP the new key is accepted", error_code(r) == 14, r.stderr)
            r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 8}, key=secret)
            check("after SIGHUP the removed key is refused", error_code(r) == 16, r.stderr)
            keys.write_text("not toml [[[")
            proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 8}, key=new_secret)
            check("a bad keys file on SIGHUP keeps the old keys", error_code(r) == 14 and proc.poll() is None, r.stderr)

            # A reload keeps each key's quota state: with max_streams = 1 and one stream open
            # (waiting on the empty pool), a second stream after SIGHUP is still refused. With
            # fresh state it would be admitted and wait until its deadline instead.
            keys.write_text(entry + "max_streams = 1\n")
            proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            stream = {"chunk_bytes": 1024, "total_bytes": 1024}
            first = subprocess.Popen(
                ["grpcurl", "-plaintext", "-format-error", "-max-time", "20", "-H",
                 f"authorization: Bearer {new_secret}", "-d", json.dumps(stream), addr,
                 "entropy.v1.EntropyService/StreamRandom"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                time.sleep(1.0)
                check("a stream of a max_streams = 1 key waits on the empty pool", first.poll() is None,
                      f"exited {first.poll()}")
                proc.send_signal(signal.SIGHUP)
                time.sleep(0.5)
                r = subprocess.run(
                    ["grpcurl", "-plaintext", "-format-error", "-max-time", "5", "-H",
                     f"authorization: Bearer {new_secret}", "-d", json.dumps(stream), addr,
                     "entropy.v1.EntropyService/StreamRandom"],
                    capture_output=True, text=True, timeout=30)
                check("after SIGHUP the key's open stream still counts: a second is RESOURCE_EXHAUSTED",
                      error_code(r) == 8 and "stream" in r.stderr, r.stderr)
            finally:
                first.kill()
                first.wait(timeout=10)
        finally:
            proc.send_signal(15)
            code = proc.wait(timeout=15)
            check("key-file gateway stops cleanly on SIGTERM", code == 0, f"exit {code}")


def tls_recipes(binary):
    """The README's TLS recipes against a dev gateway serving TLS with dev-certs."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([binary, "dev-certs", "--out", tmp], capture_output=True, text=True, timeout=30)
        check("dev-certs writes a CA and certificates", r.returncode == 0 and Path(tmp, "ca.pem").exists(), r.stderr)
        port = free_port()
        env = dict(os.environ, ENTROPY_DEV_API_KEY=KEY)
        proc = subprocess.Popen(
            [binary, "--dev", "--listen-addr", f"127.0.0.1:{port}", "--metrics-listen-addr", "",
             "--tls-cert-file", f"{tmp}/gateway.pem", "--tls-key-file", f"{tmp}/gateway.key"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The banner's commands speak TLS too, and work as printed (CA.pem: the dev CA).
            banner = []
            while not banner or " list" not in banner[-1]:
                line = proc.stdout.readline()
                if not line:
                    break
                banner.append(line)
            check("the TLS banner says TLS, never plaintext",
                  any("TLS" in b for b in banner) and not any("plaintext" in b for b in banner),
                  "".join(banner))
            printed = [b.strip() for b in banner if b.strip().startswith("grpcurl")]
            for _ in range(100):
                r = subprocess.run(["grpcurl", "-cacert", f"{tmp}/ca.pem", f"localhost:{port}",
                                    "grpc.health.v1.Health/Check"], capture_output=True, text=True, timeout=30)
                if r.returncode == 0 and '"SERVING"' in r.stdout:
                    break
                time.sleep(0.2)
            r = subprocess.run(["grpcurl", "-plaintext", f"127.0.0.1:{port}", "list"],
                               capture_output=True, text=True, timeout=30)
            check("plaintext is refused by the TLS listener", r.returncode != 0, r.stdout)
            check("the TLS banner prints grpcurl commands", len(printed) >= 5, "".join(banner))
            for line in printed:
                cmd = line.replace("CA.pem", f"{tmp}/ca.pem")
                r = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=30)
                check(f"TLS banner command works as printed: {line[:70]}", r.returncode == 0, r.stderr)
            recipes = readme_recipes("<!-- smoke: grpcurl tls recipes")
            check("README has TLS recipes", len(recipes) >= 2, str(len(recipes)))
            for recipe in recipes:
                cmd = recipe.replace("certs/", f"{tmp}/").replace("localhost:50051", f"localhost:{port}")
                r = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=30)
                check(f"README TLS recipe: {recipe[:80]}", r.returncode == 0, r.stderr)
        finally:
            proc.send_signal(15)
            code = proc.wait(timeout=15)
            check("TLS dev gateway stops cleanly", code == 0, f"exit {code}")


def drain(binary):
    """shutdown_drain_ms: after SIGTERM the gateway says NOT_SERVING (health and /readyz) at
    once, yet still serves calls until the drain ends, then exits cleanly."""
    addr, metrics = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [binary, "--dev", "--listen-addr", addr, "--metrics-listen-addr", metrics,
         "--shutdown-drain-ms", "3000"],
        env=dict(os.environ, ENTROPY_DEV_API_KEY=KEY),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        readyz = f"http://{metrics}/readyz"
        check("drain: the gateway is ready before the signal",
              wait_for(lambda: http_get(readyz, timeout=2)[0] == 200, 20, 0.1))
        text = http_get(f"http://{metrics}/metrics", timeout=2)[1]
        early = re.search(r'entropy_gateway_chunks_rejected_total\{reason="before_start"\} (\d+)', text)
        check("the dev feed's first chunk comes after the gateway's restart rule allows (none refused as before_start)",
              early is not None and early.group(1) == "0", early.group(0) if early else text[-300:])
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)  # the health service follows readiness within its 100 ms poll
        status, body = http_get(readyz, timeout=2)
        check("drain: /readyz says 503 draining right after SIGTERM",
              status == 503 and "draining" in body, f"{status} {body}")
        r = grpcurl(addr, "grpc.health.v1.Health/Check", key=None)
        check("drain: grpc.health.v1 says NOT_SERVING", "NOT_SERVING" in r.stdout, r.stdout + r.stderr)
        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 32})
        check("drain: a call made while draining is still served",
              r.returncode == 0 and proc.poll() is None, r.stderr)
        code = proc.wait(timeout=20)
        check("drain: the gateway exits cleanly once the drain and the grace period end",
              code == 0, f"exit {code}")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def main(binary):
    config_errors(binary)
    tls_recipes(binary)
    drain(binary)
    port = free_port()
    addr = f"127.0.0.1:{port}"
    env = dict(os.environ, ENTROPY_DEV_API_KEY=KEY)
    proc = subprocess.Popen(
        [binary, "--dev", "--listen-addr", addr, "--metrics-listen-addr", f"127.0.0.1:{free_port()}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            r = grpcurl(addr, "grpc.health.v1.Health/Check", key=None)
            if r.returncode == 0 and "SERVING" in r.stdout and "NOT_SERVING" not in r.stdout:
                break
            time.sleep(0.2)
        check("health reports SERVING once the pool fills", r.returncode == 0 and '"SERVING"' in r.stdout, r.stdout + r.stderr)

        r = grpcurl(addr, "list", key=None)
        listed = r.stdout.split()
        check("reflection lists EntropyService, not IngestService",
              "entropy.v1.EntropyService" in listed and "entropy.v1.IngestService" not in listed, r.stdout)

        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 32})
        data = base64.b64decode(json.loads(r.stdout)["data"]) if r.returncode == 0 else b""
        check("GetRandom returns 32 bytes", len(data) == 32, r.stderr)

        r = grpcurl(addr, "entropy.v1.EntropyService/StreamRandom",
                    data={"chunk_bytes": 65536, "total_bytes": 1 << 20})
        total = sum(len(base64.b64decode(m.get("data", ""))) for m in messages(r.stdout)) if r.returncode == 0 else -1
        check("StreamRandom total_bytes 1 MiB delivers exactly 1 MiB", total == 1 << 20, f"{total} {r.stderr}")

        r = grpcurl(addr, "entropy.v1.EntropyService/GetIntegers", data={"min": 1, "max": 6, "count": 100})
        values = [int(v) for v in json.loads(r.stdout)["values"]] if r.returncode == 0 else []
        check("GetIntegers dice are in 1..=6", len(values) == 100 and all(1 <= v <= 6 for v in values), r.stderr)

        r = grpcurl(addr, "entropy.v1.EntropyService/GetIntegers", data={"min": 5, "max": 1, "count": 1})
        check("min > max is INVALID_ARGUMENT naming both", error_code(r) == 3 and "min" in r.stderr and "max" in r.stderr, r.stderr)

        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 32}, key=None)
        check("no key is UNAUTHENTICATED", error_code(r) == 16, r.stderr)

        r = grpcurl(addr, "entropy.v1.EntropyService/GetStatus", data={})
        status = json.loads(r.stdout) if r.returncode == 0 else {}
        kinds = {s.get("kind") for s in status.get("sources", [])}
        check("GetStatus labels the dev source as OS", kinds == {"SOURCE_KIND_OS"}, r.stdout + r.stderr)

        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom", data={"num_bytes": 32})
        provenance = json.loads(r.stdout).get("provenance", {}) if r.returncode == 0 else {}
        check("GetRandom shows its provenance (OS, dev-collector)",
              provenance.get("kinds") == ["SOURCE_KIND_OS"]
              and provenance.get("collectorIds") == ["dev-collector"]
              and int(provenance.get("chunkCount", 0)) >= 1, r.stdout + r.stderr)
        r = grpcurl(addr, "entropy.v1.EntropyService/GetRandom",
                    data={"num_bytes": 32, "accept_kinds": ["SOURCE_KIND_QUANTUM"]})
        check("a quantum-only GetRandom on a dev gateway is FAILED_PRECONDITION naming the OS bytes",
              error_code(r) == 9 and "QUANTUM only" in r.stderr and "the pool holds OS:" in r.stderr,
              r.stdout + r.stderr)
        r = grpcurl(addr, "entropy.v1.EntropyService/CheckQuality", data={"sample_bytes": 65536})
        report = json.loads(r.stdout) if r.returncode == 0 else {}
        check("CheckQuality on 64 KiB of dev bytes passes with five thresholds",
              report.get("passed") is True and len(report.get("thresholds", [])) == 5,
              r.stdout + r.stderr)
        r = grpcurl(addr, "entropy.v1.EntropyService/CheckQuality", data={"sample_bytes": 100})
        check("CheckQuality below 2500 bytes is INVALID_ARGUMENT naming sample_bytes",
              error_code(r) == 3 and "sample_bytes is 100, must be 2500..=4194304" in r.stderr, r.stderr)

        recipes = readme_recipes()
        check("README has grpcurl recipes", len(recipes) >= 5, str(len(recipes)))
        for recipe in recipes:
            cmd = recipe.replace("127.0.0.1:50051", addr)
            r = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=30)
            check(f"README recipe: {recipe[:90]}", r.returncode == 0, r.stderr)

        recipes = readme_recipes("<!-- smoke: ghz recipes", tool="ghz")
        check("README has ghz recipes (unary and streaming)",
              len(recipes) >= 2 and any("StreamRandom" in r for r in recipes), str(recipes))
        for recipe in recipes:
            cmd = recipe.replace("127.0.0.1:50051", addr)
            # No stdin: a ghz in a background process group that touches the terminal is stopped.
            r = subprocess.run(["bash", "-c", cmd], env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=120)
            check(f"README ghz recipe, every call OK: {recipe[:90]}",
                  r.returncode == 0 and ghz_all_ok(r.stdout), r.stdout[-1500:] + r.stderr[-500:])
    finally:
        proc.send_signal(15)
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
        check("SIGTERM stops the gateway cleanly (exit 0)", code == 0, f"exit {code}: {proc.stderr.read()[-2000:]}")
        banner = proc.stdout.read()
        check("banner never prints a key taken from the environment", KEY not in banner)

    return check.summary("smoke")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
