#!/usr/bin/env python3
"""A real Prometheus scrapes the diode: entropy-simulator -> entropy-collector ->
entropy-gateway on loopback (free ports; TLS, mTLS and keys from deploy/gen-secrets.sh, as in compose.yaml), and Debian's
`prometheus` scraping both metrics endpoints every second, with deploy/prometheus/alerts.yml
loaded. A client draws entropy with grpcurl; then Prometheus' HTTP API must show the series
moving: targets up, bytes ingested and served, source bytes, RPC histogram counts, per-key
counters, auth failures, the pool. Also checks that every query of the Grafana dashboard and
every alert rule evaluates without error against the real series, that no alert fires on this
healthy system, and that the compose health check script (deploy/healthcheck.sh) sees /healthz
and /readyz answer 200.

Every failure names the series (or endpoint) that did not move. Everything started here is
stopped at the end, on failure too.

Usage: scripts/deploy/prometheus_scrape.py BIN_DIR     (BIN_DIR holds the release binaries)
Needs: prometheus (Debian package `prometheus`: scripts/deploy/configs.sh installs it), grpcurl.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, Procs, free_port, grpcurl, http_get, wait_for  # noqa: E402

SCRAPE_INTERVAL_S = 1
check = harness.Checks()


class Prom:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def query(self, expr):
        """The instant vector of `expr` as [(labels, value)], or None if the query failed."""
        status, body = http_get(f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        if status != 200:
            return None
        data = json.loads(body)["data"]
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        return [(r["metric"], float(r["value"][1])) for r in data["result"]]

    def value(self, expr):
        """The single value of `expr` (summed), or None when Prometheus has no such series."""
        r = self.query(f"sum({expr})")
        if not r:
            return None
        return r[0][1]

    def api(self, path):
        status, body = http_get(f"{self.base}/api/v1/{path}")
        return json.loads(body)["data"] if status == 200 else None


def exposed(metrics_url, name):
    """Lines of a target's /metrics naming `name`: for failure messages."""
    status, body = http_get(metrics_url)
    if status != 200:
        return f"{metrics_url} answered {status}: {body[:200]}"
    lines = [line for line in body.splitlines() if name in line and not line.startswith("#")]
    return f"{metrics_url} exposes {len(lines)} line(s) of {name}" + (f", e.g. {lines[0]}" if lines else "")


def run(bin_dir, work):
    ports = {k: free_port() for k in ("sim", "public", "ingest", "gw_metrics", "col_metrics", "prom")}
    gw_metrics = f"http://127.0.0.1:{ports['gw_metrics']}/metrics"
    col_metrics = f"http://127.0.0.1:{ports['col_metrics']}/metrics"
    public = f"localhost:{ports['public']}"
    procs = Procs(work)

    # The secrets compose mounts, made by deploy/gen-secrets.sh, used as compose uses them: TLS
    # on both gateway listeners, mTLS for the collector, the "demo" client key, MAC key "demo".
    secrets = work / "secrets"
    r = harness.gen_secrets(bin_dir, secrets)
    if not check("deploy/gen-secrets.sh writes the secrets", r.returncode == 0, r.stderr):
        return
    api_key = (secrets / "client-api-key").read_text().strip()
    cacert = secrets / "ca.pem"
    (work / "mac-keys").mkdir()
    shutil.copy(secrets / "mac.key", work / "mac-keys" / "demo.key")
    (work / "collector.toml").write_text(f"""\
collector_id = "scrape-collector"
key_id = "demo"
key_file = "{secrets / 'mac.key'}"
chunk_bytes = 16384
mixing = "xor"
min_sources = 1
metrics_listen_addr = "127.0.0.1:{ports['col_metrics']}"

[[gateway]]
id = "gateway"
endpoint = "https://localhost:{ports['ingest']}"
ca_file = "{cacert}"
client_cert_file = "{secrets / 'collector.pem'}"
client_key_file = "{secrets / 'collector.key'}"

[[source]]
name = "quantis-sim"
type = "quantis"
url = "https://127.0.0.1:{ports['sim']}"
ca_file = "{work / 'simulator.pem'}"
""")
    # Prometheus: the same jobs and rules as deploy/prometheus/prometheus.yml, scraping every
    # second. Rules load from a copy beside the config (rule_files paths are relative to it).
    shutil.copy(ROOT / "deploy/prometheus/alerts.yml", work / "alerts.yml")
    (work / "prometheus.yml").write_text(f"""\
global:
  scrape_interval: {SCRAPE_INTERVAL_S}s
  evaluation_interval: {SCRAPE_INTERVAL_S}s
rule_files: [alerts.yml]
scrape_configs:
  - job_name: entropy-gateway
    static_configs: [{{targets: ["127.0.0.1:{ports['gw_metrics']}"]}}]
  - job_name: entropy-collector
    static_configs: [{{targets: ["127.0.0.1:{ports['col_metrics']}"]}}]
""")

    try:
        procs.start("simulator", [f"{bin_dir}/entropy-simulator", "--listen-addr", f"127.0.0.1:{ports['sim']}", "--tls",
                                  "--cert-out", str(work / "simulator.pem"), "--rate-bytes-per-s", "400000"])
        if not check("simulator started", wait_for(lambda: (work / "simulator.pem").exists()
                                                   and (work / "simulator.pem").stat().st_size > 0, 15),
                     procs.log_tail("simulator")):
            return
        procs.start("gateway", [f"{bin_dir}/entropy-gateway", "--gateway-id", "gateway",
                                "--api-keys-file", str(secrets / "api-keys.toml"),
                                "--ingest-keys-dir", str(work / "mac-keys"),
                                "--state-dir", str(work / "gateway-state"),
                                "--listen-addr", f"127.0.0.1:{ports['public']}",
                                "--ingest-listen-addr", f"127.0.0.1:{ports['ingest']}",
                                "--metrics-listen-addr", f"127.0.0.1:{ports['gw_metrics']}",
                                "--tls-cert-file", str(secrets / "gateway.pem"),
                                "--tls-key-file", str(secrets / "gateway.key"),
                                "--ingest-tls-cert-file", str(secrets / "gateway.pem"),
                                "--ingest-tls-key-file", str(secrets / "gateway.key"),
                                "--ingest-client-ca-file", str(cacert),
                                # 64 MiB: the simulator's 400 KB/s cannot fill it during the test.
                                "--pool-capacity-bytes", str(64 << 20), "--pool-low-watermark-bytes", "8192"])
        procs.start("collector", [f"{bin_dir}/entropy-collector", "--config", str(work / "collector.toml")])
        procs.start("prometheus", ["prometheus", f"--config.file={work / 'prometheus.yml'}",
                                   f"--storage.tsdb.path={work / 'tsdb'}",
                                   f"--web.listen-address=127.0.0.1:{ports['prom']}"])
        prom = Prom(ports["prom"])

        if not check("prometheus is ready", wait_for(lambda: http_get(f"{prom.base}/-/ready")[0] == 200, 30),
                     procs.log_tail("prometheus")):
            return
        for name, url in (("gateway", gw_metrics), ("collector", col_metrics)):
            ok = wait_for(lambda: http_get(url)[0] == 200 or not procs.alive(name), 20) and procs.alive(name)
            if not check(f"{name} serves /metrics", ok, f"{url}: {http_get(url)}; log: {procs.log_tail(name)}"):
                return  # nothing below can pass without it

        # Health endpoints through the compose health check script (deploy/healthcheck.sh).
        probe = [str(ROOT / "deploy/healthcheck.sh")]
        for name, port in (("gateway", ports["gw_metrics"]), ("collector", ports["col_metrics"])):
            r = subprocess.run(probe + ["/healthz", str(port)], capture_output=True, text=True, timeout=10)
            check(f"{name} /healthz: the compose health check passes", r.returncode == 0, r.stderr)
            ready = wait_for(lambda: subprocess.run(probe + ["/readyz", str(port)], capture_output=True,
                                                    timeout=10).returncode == 0, 30)
            check(f"{name} /readyz: the compose health check passes once entropy flows", ready,
                  subprocess.run(probe + ["/readyz", str(port)], capture_output=True, text=True).stderr)

        for job in ("entropy-gateway", "entropy-collector"):
            up = wait_for(lambda: prom.value(f'up{{job="{job}"}}') == 1, 20)
            check(f'up{{job="{job}"}} == 1', up, f"targets: {json.dumps(prom.api('targets'))[:1500]}")

        # Baselines, then traffic.
        served0 = prom.value('entropy_gateway_served_bytes_total{method="GetRandom"}') or 0
        source0 = wait_for(lambda: prom.value('entropy_collector_source_bytes_total{source="quantis-sim"}'), 15)
        check('entropy_collector_source_bytes_total{source="quantis-sim"} present', source0,
              exposed(col_metrics, "entropy_collector_source_bytes_total"))
        calls, size = 20, 4096
        drawn = 0
        for _ in range(calls):
            r = grpcurl(public, "entropy.v1.EntropyService/GetRandom", key=api_key, data={"num_bytes": size}, cacert=cacert)
            if r.returncode == 0:
                drawn += size
        check(f"{calls} GetRandom calls of {size} bytes succeed", drawn == calls * size, f"drew {drawn} bytes")
        stream_total = 65536
        r = grpcurl(public, "entropy.v1.EntropyService/StreamRandom", key=api_key,
                    data={"chunk_bytes": 16384, "total_bytes": stream_total}, cacert=cacert)
        check(f"a StreamRandom of {stream_total} bytes succeeds", r.returncode == 0, r.stderr)
        r = grpcurl(public, "entropy.v1.EntropyService/GetIntegers", key=api_key, data={"min": 1, "max": 6, "count": 10}, cacert=cacert)
        check("a GetIntegers call succeeds", r.returncode == 0, r.stderr)
        r = grpcurl(public, "entropy.v1.EntropyService/GetRandom", key="not-a-key", data={"num_bytes": 8}, cacert=cacert)
        check("a call with a bad key is refused", r.returncode != 0 and "Unauthenticated" in r.stderr, r.stderr)

        # Each expectation: (description, PromQL giving one number, predicate, series for the
        # failure message, the target exposing it). Polled until true, a few scrapes at most.
        expectations = [
            ("bytes are being ingested", "increase(entropy_gateway_ingested_bytes_total[1m])", lambda v: v > 0,
             "entropy_gateway_ingested_bytes_total", gw_metrics),
            ("chunks from scrape-collector accepted",
             'entropy_gateway_chunks_accepted_total{collector="scrape-collector"}', lambda v: v >= 1,
             "entropy_gateway_chunks_accepted_total", gw_metrics),
            (f"served bytes (GetRandom) grew by at least the {drawn} drawn",
             'entropy_gateway_served_bytes_total{method="GetRandom"}', lambda v: v - served0 >= drawn,
             "entropy_gateway_served_bytes_total", gw_metrics),
            (f"served bytes (StreamRandom) >= {stream_total}",
             'entropy_gateway_served_bytes_total{method="StreamRandom"}', lambda v: v >= stream_total,
             "entropy_gateway_served_bytes_total", gw_metrics),
            ("streams opened counted", "entropy_gateway_streams_opened_total", lambda v: v >= 1,
             "entropy_gateway_streams_opened_total", gw_metrics),
            ("RPC histogram: StreamRandom OK count >= 1",
             'entropy_gateway_rpc_duration_seconds_count{method="StreamRandom",code="OK"}', lambda v: v >= 1,
             "entropy_gateway_rpc_duration_seconds_count", gw_metrics),
            ("the collector's connection counted on the ingest listener",
             'entropy_gateway_connections_active{listener="ingest"}', lambda v: v >= 1,
             "entropy_gateway_connections_active", gw_metrics),
            ("served bytes (GetIntegers) counted", 'entropy_gateway_served_bytes_total{method="GetIntegers"}',
             lambda v: v > 0, "entropy_gateway_served_bytes_total", gw_metrics),
            (f"RPC histogram: GetRandom OK count >= {calls}",
             'entropy_gateway_rpc_duration_seconds_count{method="GetRandom",code="OK"}', lambda v: v >= calls,
             "entropy_gateway_rpc_duration_seconds_count", gw_metrics),
            ("RPC histogram: GetRandom buckets present",
             'entropy_gateway_rpc_duration_seconds_bucket{method="GetRandom",le="+Inf"}', lambda v: v >= calls,
             "entropy_gateway_rpc_duration_seconds_bucket", gw_metrics),
            (f"per-key requests: key demo, GetRandom >= {calls}",
             'entropy_gateway_key_requests_total{key="demo",method="GetRandom"}', lambda v: v >= calls,
             "entropy_gateway_key_requests_total", gw_metrics),
            (f"per-key bytes: key demo >= {drawn}", 'entropy_gateway_key_served_bytes_total{key="demo"}',
             lambda v: v >= drawn, "entropy_gateway_key_served_bytes_total", gw_metrics),
            ("auth failure counted (invalid key)", 'entropy_gateway_auth_failures_total{reason="invalid"}',
             lambda v: v >= 1, "entropy_gateway_auth_failures_total", gw_metrics),
            ("pool holds bytes", "entropy_gateway_pool_bytes", lambda v: v > 0, "entropy_gateway_pool_bytes", gw_metrics),
            ("pool capacity exposed", "entropy_gateway_pool_capacity_bytes", lambda v: v >= 1 << 20,
             "entropy_gateway_pool_capacity_bytes", gw_metrics),
            ("low watermark exposed (8192)", "entropy_gateway_pool_low_watermark_bytes", lambda v: v == 8192,
             "entropy_gateway_pool_low_watermark_bytes", gw_metrics),
            ("gateway ready", "entropy_gateway_ready", lambda v: v == 1, "entropy_gateway_ready", gw_metrics),
            ("gateway build info", "entropy_gateway_build_info", lambda v: v == 1, "entropy_gateway_build_info",
             gw_metrics),
            ("collector source bytes increased",
             'entropy_collector_source_bytes_total{source="quantis-sim"}', lambda v: source0 is not None and v > source0,
             "entropy_collector_source_bytes_total", col_metrics),
            ("collector source up", 'entropy_collector_source_up{source="quantis-sim"}', lambda v: v == 1,
             "entropy_collector_source_up", col_metrics),
            ("collector fetch latency histogram counts",
             'entropy_collector_fetch_duration_seconds_count{source="quantis-sim"}', lambda v: v > 0,
             "entropy_collector_fetch_duration_seconds_count", col_metrics),
            # One healthy source comes out of the mixer as is: mixing="none" even with xor set.
            ("collector mixed bytes", "entropy_collector_mixed_bytes_total", lambda v: v > 0,
             "entropy_collector_mixed_bytes_total", col_metrics),
            ("collector publishes OK", 'entropy_collector_publish_total{code="OK"}', lambda v: v >= 1,
             "entropy_collector_publish_total", col_metrics),
            ("collector published bytes", "entropy_collector_published_bytes_total", lambda v: v > 0,
             "entropy_collector_published_bytes_total", col_metrics),
            ("collector publish latency histogram counts", "entropy_collector_publish_duration_seconds_count",
             lambda v: v >= 1, "entropy_collector_publish_duration_seconds_count", col_metrics),
            ("collector last publish within 30 s", "time() - entropy_collector_last_publish_timestamp_seconds",
             lambda v: 0 <= v < 30, "entropy_collector_last_publish_timestamp_seconds", col_metrics),
            ("collector queue capacity exposed", "entropy_collector_queue_capacity_chunks", lambda v: v >= 1,
             "entropy_collector_queue_capacity_chunks", col_metrics),
            ("collector build info", "entropy_collector_build_info", lambda v: v == 1,
             "entropy_collector_build_info", col_metrics),
        ]
        # All polled together, for at most 30 s (a few dozen scrapes), then each reported.
        last = {}
        pending = list(expectations)
        deadline = time.monotonic() + 30
        while pending and time.monotonic() < deadline:
            still = []
            for e in pending:
                last[e[0]] = v = prom.value(e[1])
                if v is None or not e[2](v):
                    still.append(e)
            pending = still
            if pending:
                time.sleep(0.5)
        for desc, expr, pred, series, target in expectations:
            v = last.get(desc)
            if v is None:
                detail = f"Prometheus has no series for {expr}; {exposed(target, series)}"
            else:
                detail = f"{expr} = {v}"
            check(desc, v is not None and pred(v), detail)

        # Every query of the Grafana dashboard runs on Prometheus without error, and the
        # top row ("Is entropy flowing?") has a value in each panel.
        dash = json.loads((ROOT / "deploy/grafana/entropy-diode.json").read_text())
        errors, empty_top = [], []
        top_row = True
        for panel in dash["panels"]:
            if panel["type"] == "row":
                top_row = panel["title"].startswith("Is entropy flowing")
                continue
            for t in panel.get("targets", []):
                status, body = http_get(f"{prom.base}/api/v1/query?" + urllib.parse.urlencode({"query": t["expr"]}))
                if status != 200:
                    errors.append(f"{panel['title']}: {t['expr']}: {body[:200]}")
                elif top_row and not json.loads(body)["data"]["result"]:
                    empty_top.append(f"{panel['title']}: {t['expr']}")
        check("every dashboard query runs without error", not errors, "; ".join(errors))
        check("every panel of the dashboard's top row has data", not empty_top, "; ".join(empty_top))

        # The alert rules evaluate against these real series without error, and none fires.
        def rules_evaluated():
            groups = (prom.api("rules") or {}).get("groups", [])
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules) else None

        rules = wait_for(rules_evaluated, 10) or []
        bad = [f"{r['name']}: {r.get('lastError')}" for r in rules if r.get("health") != "ok"]
        check(f"all {len(rules)} alert rules evaluate without error", rules and not bad, "; ".join(bad) or "no rules")
        firing = [a["labels"]["alertname"] for a in (prom.api("alerts") or {}).get("alerts", []) if a["state"] == "firing"]
        check("no alert fires on a healthy diode", not firing, ", ".join(firing))
    finally:
        procs.stop()
        for name in ("simulator", "gateway", "collector", "prometheus"):
            if name in procs.procs:
                check(f"{name} stopped", not procs.alive(name))
        if check.failed:
            for name in procs.procs:
                print(f"--- {name} log (tail) ---\n{procs.log_tail(name, 1500)}")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bin_dir = os.path.abspath(sys.argv[1])
    for tool in ("prometheus", "grpcurl"):
        if shutil.which(tool) is None:
            print(f"{tool} not found on PATH (prometheus: scripts/deploy/configs.sh installs Debian's package)")
            return 1
    work = Path(tempfile.mkdtemp(prefix="prometheus-scrape-"))
    try:
        run(bin_dir, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return check.summary("prometheus scrape")


if __name__ == "__main__":
    sys.exit(main())
