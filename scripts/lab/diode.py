#!/usr/bin/env python3
"""The diode, proven on a real network path (issue #4, item 5).

Two hosts of the namespace lab (netns.py), on one bridge, stand for the two sides of the diode:

    INSIDE  (edd<pid>-in):  entropy-simulator (a stand-in Quantis appliance) -> entropy-collector
                            (whose one listening port, metrics and health, is on every address)
                            nftables: new connections leave only towards the gateway's ingest port
       | 10.213.77.1/24, fd00:e:d::1  <-bridge->  10.213.77.2/24, fd00:e:d::2
    OUTSIDE (edd<pid>-out): entropy-gateway (ingest on its lab address), grpcurl as the client

The checks, in order:
  1. control, before any rule: from outside, the simulator port, a probe listener and ping on
     the inside answer, and from inside the gateway's public port answers; so the negative
     checks below cannot pass because of a dead listener or a broken link;
  2. the firewall is loaded in the inside namespace (outside cannot change it);
  3. data flows: the collector starts inside, its chunks reach the gateway (GetStatus counts
     grow) and a client outside draws bytes;
  4. the outside side cannot open a connection to the inside at all: TCP to the simulator port,
     to the probe listener (IPv4 and IPv6), to a closed port, to the collector's metrics port,
     and ping (IPv4 and IPv6) all get no answer, not even a refusal; the firewall's drop counter
     counts those packets; the probe listener and the collector's /healthz still answer from
     inside, and the inside can open nothing but the ingest port;
  5. with the rules deleted again the same connects succeed: the firewall is what blocks them.

Kept because nothing else shows the diode on a real network path: the Rust suites run
everything on loopback in one process, where "the outside cannot connect in" means nothing.

Everything (processes, namespaces with their veths, the temporary directory) is removed on exit,
on failure and on Ctrl-C/SIGTERM too.

Usage: scripts/lab/diode.py BIN_DIR
Needs root, `ip netns`, nft (Debian: nftables), ping (Debian: iputils-ping) and grpcurl. Where
root, network namespaces or the tools are missing it prints "SKIP: <reason>" and exits 0; any
other failure exits 1.
"""
import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
import netns  # noqa: E402
from harness import ROOT, run, wait_for  # noqa: E402
from netns import Skip, nsexec  # noqa: E402

IN, OUT = "in", "out"  # the lab's two hosts
IN4, OUT4 = "10.213.77.1", "10.213.77.2"
IN6, OUT6 = "fd00:e:d::1", "fd00:e:d::2"
PROBE_TIMEOUT_S = 5.0  # a veth answers in microseconds; no answer in 5 s means none is coming
TABLE = "diode"

# Run with `python3 -c` inside a namespace. Prints one word: connected (then, if a message was
# given, sends it and adds the first line of the answer), timeout, refused, or error:<reason>.
CONNECT = r"""
import socket, sys
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
s.settimeout(timeout)
try:
    s.connect((host, port))
    if len(sys.argv) > 4:
        s.sendall(sys.argv[4].encode())
        print("connected reply=" + s.recv(256).decode(errors="replace").splitlines()[0])
    else:
        print("connected")
except socket.timeout:
    print("timeout")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print("error:" + (e.strerror or str(e)))
"""

# A TCP echo listener on every address (IPv4 and IPv6) of its namespace, on a port the kernel
# picks; prints the port, then echoes one message per connection.
LISTENER = r"""
import socket
srv = socket.socket(socket.AF_INET6)
srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
srv.bind(("::", 0))
srv.listen(16)
print(srv.getsockname()[1], flush=True)
while True:
    conn, _ = srv.accept()
    with conn:
        conn.settimeout(5)
        try:
            conn.sendall(conn.recv(256))
        except OSError:
            pass
"""

HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: collector\r\nConnection: close\r\n\r\n"

def firewall_rules(ingest_port):
    """The inside namespace's ruleset: the diode itself."""
    return f"""
table inet {TABLE} {{
  chain input {{
    type filter hook input priority filter; policy drop;
    iif "lo" accept
    ct state established,related accept
    counter drop comment "outside-new-dropped"
  }}
  chain output {{
    type filter hook output priority filter; policy drop;
    oif "lo" accept
    ct state established,related accept
    ip daddr {OUT4} tcp dport {ingest_port} ct state new accept
    counter drop comment "inside-new-dropped"
  }}
}}
"""


def http_ok(probe_outcome):
    return probe_outcome.startswith("connected reply=HTTP/1.") and " 200 " in probe_outcome


class Diode:
    def __init__(self, bin_dir, grpcurl):
        self.bin_dir = Path(bin_dir).resolve()
        self.grpcurl_bin = grpcurl
        self.lab = netns.Lab("edd", IN4.rsplit(".", 1)[0], IN6.split("::")[0])
        self.work = self.lab.work
        # Every check's detail is printed, passed or not: it is the test's transcript.
        self.check = harness.Checks(detail_on_pass=True)
        self.api_key = "netns-diode-" + os.urandom(12).hex()

    # ---- transcript ----
    def section(self, title):
        print(f"\n-- {title}", flush=True)

    # ---- network ----
    def setup_network(self):
        for host, addr in ((IN, IN4), (OUT, OUT4)):
            self.lab.host(host, int(addr.rsplit(".", 1)[1]))
        # nft must work in a namespace, conntrack included; load and drop a throwaway table.
        probe = "table inet edprobe {\n chain c { type filter hook input priority filter; ct state established accept; }\n}\n"
        r = run(nsexec(self.lab.ns(IN), "nft", "-f", "-"), check=False, timeout=30, input=probe)
        if r.returncode != 0:
            raise Skip(f"nft cannot load rules in a namespace: {r.stderr.strip()}")
        run(nsexec(self.lab.ns(IN), "nft", "delete", "table", "inet", "edprobe"))
        print(f"namespaces {self.lab.ns(IN)} ({IN4}, {IN6}) and {self.lab.ns(OUT)} ({OUT4}, {OUT6}), "
              f"bridged in {self.lab.hub}")

    def start_connects(self, ns, host, port, token=None):
        """Starts one connect attempt; `finish` collects its outcome. Attempts run in parallel."""
        cmd = nsexec(self.lab.ns(ns), sys.executable, "-c", CONNECT, host, port, PROBE_TIMEOUT_S)
        if token:
            cmd.append(token)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def start_ping(self, ns, host):
        return subprocess.Popen(nsexec(self.lab.ns(ns), "ping", "-n", "-c", "2", "-W", str(int(PROBE_TIMEOUT_S)), host),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    @staticmethod
    def finish(proc, ping=False):
        out, _ = proc.communicate(timeout=PROBE_TIMEOUT_S * 4)
        if ping:
            return "replied" if proc.returncode == 0 else "no reply"
        return out.strip().splitlines()[-1] if out.strip() else f"no output (exit {proc.returncode})"

    def drop_counters(self):
        """Packets counted by the two drop rules of the inside firewall."""
        ruleset = json.loads(run(nsexec(self.lab.ns(IN), "nft", "-j", "list", "table", "inet", TABLE)).stdout)
        counts = {}
        for item in ruleset["nftables"]:
            rule = item.get("rule")
            if rule and "comment" in rule:
                for expr in rule["expr"]:
                    if "counter" in expr:
                        counts[rule["comment"]] = expr["counter"]["packets"]
        return counts

    # ---- programs ----
    def grpc(self, method, data):
        return self.lab.exec(OUT, self.grpcurl_bin, "-plaintext", "-H", f"authorization: Bearer {self.api_key}",
                             "-d", json.dumps(data), f"127.0.0.1:{self.public_port}", method, timeout=30)

    def status(self):
        r = self.grpc("entropy.v1.EntropyService/GetStatus", {})
        return json.loads(r.stdout) if r.returncode == 0 else None

    def wait_status(self, pred, seconds):
        """Polls GetStatus until `pred` holds (or `seconds` pass); returns the last status."""
        last = None
        for _ in range(int(seconds * 5)):
            last = self.status() or last
            if last is not None and pred(last):
                break
            for name, p in self.lab.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited {p.returncode}:\n{self.lab.log_tail(name)}")
            time.sleep(0.2)
        return last or {}

    def start_inside_services(self):
        self.sim_port = self.lab.free_port(IN)
        pem = self.work / "simulator.pem"
        # On every inside address, so the outside could reach it were it not for the firewall.
        self.lab.spawn(IN, "simulator", [self.bin_dir / "entropy-simulator", "--listen-addr", f"0.0.0.0:{self.sim_port}",
                                         "--tls", "--cert-out", pem, "--rate-bytes-per-s", "400000"])
        self.lab.spawn(IN, "probe-listener", [sys.executable, "-c", LISTENER])
        port = wait_for(lambda: self.lab.log_tail("probe-listener", 1).strip().isdigit()
                        and int(self.lab.log_tail("probe-listener", 1)), 10, 0.1)
        if not port:
            raise RuntimeError(f"probe listener did not start:\n{self.lab.log_tail('probe-listener')}")
        self.listen_port = port
        if not wait_for(lambda: pem.exists() and pem.stat().st_size > 0, 10, 0.1):
            raise RuntimeError(f"simulator did not start:\n{self.lab.log_tail('simulator')}")
        self.closed_port = self.lab.free_port(IN)  # nothing listens there
        print(f"inside: simulator on *:{self.sim_port} (TLS), probe listener on *:{self.listen_port}, "
              f"port {self.closed_port} closed")

    def start_gateway(self):
        self.public_port = self.lab.free_port(OUT)
        self.ingest_port = self.lab.free_port(OUT)
        keys = self.work / "mac-keys"
        keys.mkdir(mode=0o700)
        mac = os.urandom(32).hex()
        (keys / "netns.key").write_text(mac)
        (self.work / "collector-mac.key").write_text(mac)
        digest = hashlib.sha256(self.api_key.encode()).hexdigest()
        (self.work / "api-keys.toml").write_text(f'[[key]]\nname = "netns-diode"\nsha256 = "{digest}"\n')
        self.lab.spawn(OUT, "gateway", [self.bin_dir / "entropy-gateway", "--gateway-id", "netns-gateway", "--api-keys-file", self.work / "api-keys.toml",
                                       "--ingest-keys-dir", keys, "--state-dir", self.work / "gateway-state",
                                       "--listen-addr", f"0.0.0.0:{self.public_port}",
                                       "--ingest-listen-addr", f"{OUT4}:{self.ingest_port}",
                                       "--pool-low-watermark-bytes", "8192", "--metrics-listen-addr", ""])
        st = self.wait_status(lambda s: True, 30)
        if not st:
            raise RuntimeError(f"gateway did not answer GetStatus:\n{self.lab.log_tail('gateway')}")
        # A gateway accepts chunks dated from its start plus max_future_skew_ms (2 s) on; the
        # check below that no chunk is rejected is about forged or damaged chunks, so let the
        # start rule's window pass first (a collector re-seals what it refuses, tested elsewhere).
        time.sleep(2.2)
        print(f"outside: gateway public *:{self.public_port}, ingest {OUT4}:{self.ingest_port}")

    def start_collector(self):
        # Its metrics and health endpoint is the collector's one listening port: on every inside
        # address, so the outside could reach it were it not for the firewall.
        self.metrics_port = self.lab.free_port(IN)
        cfg = self.work / "collector.toml"
        cfg.write_text(
            'collector_id = "netns-collector"\nkey_id = "netns"\n'
            f'metrics_listen_addr = "0.0.0.0:{self.metrics_port}"\n'
            f'key_file = "{self.work / "collector-mac.key"}"\n'
            'chunk_bytes = 16384\nmixing = "xor"\nmin_sources = 1\n'
            f'[[gateway]]\nid = "netns-gateway"\nendpoint = "http://{OUT4}:{self.ingest_port}"\n'
            '[[source]]\nname = "quantis-sim"\ntype = "quantis"\n'
            f'url = "https://127.0.0.1:{self.sim_port}"\nca_file = "{self.work / "simulator.pem"}"\n')
        self.lab.spawn(IN, "collector", [self.bin_dir / "entropy-collector", "--config", cfg])

    # ---- the test ----
    def control(self):
        self.section("control: no firewall yet, so everything below must connect")
        probes = [
            (f"outside -> inside {IN4}:{self.sim_port} (simulator)", self.start_connects(OUT, IN4, self.sim_port), "connected"),
            (f"outside -> inside {IN4}:{self.listen_port} (probe listener)",
             self.start_connects(OUT, IN4, self.listen_port, "hello-v4"), "connected reply=hello-v4"),
            (f"outside -> inside [{IN6}]:{self.listen_port} (probe listener)",
             self.start_connects(OUT, IN6, self.listen_port, "hello-v6"), "connected reply=hello-v6"),
            (f"outside -> inside {IN4}:{self.closed_port} (closed port)", self.start_connects(OUT, IN4, self.closed_port), "refused"),
            (f"inside -> outside {OUT4}:{self.public_port} (gateway public port)",
             self.start_connects(IN, OUT4, self.public_port), "connected"),
        ]
        pings = [(f"outside pings inside {IN4}", self.start_ping(OUT, IN4)),
                 (f"outside pings inside {IN6}", self.start_ping(OUT, IN6))]
        for name, proc, want in probes:
            got = self.finish(proc)
            self.check(name, got == want, got)
        for name, proc in pings:
            got = self.finish(proc, ping=True)
            self.check(name, got == "replied", got)

    def apply_firewall(self):
        self.section("firewall: loaded in the INSIDE namespace")
        r = run(nsexec(self.lab.ns(IN), "nft", "-f", "-"), check=False, timeout=30,
                input=firewall_rules(self.ingest_port))
        if not self.check("nft accepts the diode ruleset", r.returncode == 0, r.stderr.strip()):
            raise RuntimeError("no firewall, nothing to test")
        print(run(nsexec(self.lab.ns(IN), "nft", "list", "table", "inet", TABLE)).stdout.rstrip())

    def data_flows(self):
        self.section("data flows inside -> outside through the firewall")
        st = self.wait_status(lambda s: int(s.get("chunksAcceptedTotal", 0)) >= 3, 60)
        accepted = int(st.get("chunksAcceptedTotal", 0))
        self.check("collector's chunks reach the gateway (GetStatus chunks_accepted_total >= 3)", accepted >= 3,
                   f"accepted {accepted}, ingested {st.get('ingestedBytesTotal', 0)} B, pool {st.get('poolBytes', 0)} B"
                   + ("" if accepted >= 3 else f"\n{self.lab.log_tail('collector')}"))
        rejected = int(st.get("chunksRejectedTotal", 0))
        self.check("no chunk was rejected", rejected == 0, f"rejected {rejected}" + ("" if rejected == 0 else json.dumps(st)))
        sources = st.get("sources", [])
        named = any(s.get("collectorId") == "netns-collector" and s.get("name") == "quantis-sim"
                    and s.get("kind") == "SOURCE_KIND_QUANTUM" for s in sources)
        self.check("provenance names the inside's (simulated) quantum source", named,
                   "netns-collector/quantis-sim, SOURCE_KIND_QUANTUM" if named else json.dumps(sources))
        r = self.grpc("entropy.v1.EntropyService/GetRandom", {"num_bytes": 64})
        data = base64.b64decode(json.loads(r.stdout).get("data", "")) if r.returncode == 0 else b""
        self.check("a client in the outside namespace draws 64 bytes (GetRandom)", len(data) == 64,
                   f"{len(data)} bytes: {data[:8].hex()}..." if data else r.stderr.strip())
        return accepted

    def reply_is_empty(self):
        """What the established connection carries back is the Publish reply: a message with no
        fields (only the status travels back), read from the proto that both sides are built from."""
        r = run([self.grpcurl_bin, "-import-path", ROOT / "proto", "-proto", "entropy/v1/ingest.proto",
                 "-msg-template", "describe", "entropy.v1.PublishResponse"], check=False)
        template = r.stdout.rsplit("Message template:", 1)[-1].strip() if r.returncode == 0 else r.stderr.strip()
        self.check("the reply on that connection, entropy.v1.PublishResponse, has no fields", template == "{}",
                   f"template {template}")

    def blocked(self, accepted_before):
        self.section("the outside cannot open a connection to the inside")
        before = self.drop_counters()
        inbound = [
            (f"outside -> inside {IN4}:{self.sim_port} (simulator)", self.start_connects(OUT, IN4, self.sim_port)),
            (f"outside -> inside {IN4}:{self.listen_port} (probe listener)",
             self.start_connects(OUT, IN4, self.listen_port, "hello-v4")),
            (f"outside -> inside [{IN6}]:{self.listen_port} (probe listener)",
             self.start_connects(OUT, IN6, self.listen_port, "hello-v6")),
            (f"outside -> inside {IN4}:{self.closed_port} (closed port: not even a refusal comes back)",
             self.start_connects(OUT, IN4, self.closed_port)),
            (f"outside -> inside {IN4}:{self.metrics_port} (the collector's metrics and health port)",
             self.start_connects(OUT, IN4, self.metrics_port, HEALTHZ)),
        ]
        outbound = (f"inside -> outside {OUT4}:{self.public_port} (only the ingest port may be dialled)",
                    self.start_connects(IN, OUT4, self.public_port))
        pings = [(f"outside pings inside {IN4}", self.start_ping(OUT, IN4)),
                 (f"outside pings inside {IN6}", self.start_ping(OUT, IN6))]
        alive = self.start_connects(IN, IN4, self.listen_port, "from-inside")
        alive_metrics = self.start_connects(IN, IN4, self.metrics_port, HEALTHZ)
        for name, proc in inbound + [outbound]:
            got = self.finish(proc)
            self.check(name, got == "timeout", got)
        for name, proc in pings:
            got = self.finish(proc, ping=True)
            self.check(name, got == "no reply", got)
        got = self.finish(alive)
        self.check(f"inside -> inside {IN4}:{self.listen_port}: the probe listener is alive",
                   got == "connected reply=from-inside", got)
        got = self.finish(alive_metrics)
        self.check(f"inside -> inside {IN4}:{self.metrics_port}: the collector's /healthz answers",
                   http_ok(got), got)
        after = self.drop_counters()
        dropped_in = after.get("outside-new-dropped", 0) - before.get("outside-new-dropped", 0)
        dropped_out = after.get("inside-new-dropped", 0) - before.get("inside-new-dropped", 0)
        # At least one packet per blocked attempt: 5 TCP connects and 2 x 2 pings.
        self.check("the firewall's inbound drop rule counted those packets (>= 9)", dropped_in >= 9,
                   f"{dropped_in} packets")
        self.check("the firewall's outbound drop rule counted the inside's attempt (>= 1)", dropped_out >= 1,
                   f"{dropped_out} packets")
        st = self.wait_status(lambda s: int(s.get("chunksAcceptedTotal", 0)) > accepted_before, 60)
        self.check("chunks keep flowing meanwhile", int(st.get("chunksAcceptedTotal", 0)) > accepted_before,
                   f"accepted {accepted_before} -> {st.get('chunksAcceptedTotal', 0)}")

    def rules_removed(self):
        self.section("without the rules the same connect succeeds again: the firewall is what blocks it")
        run(nsexec(self.lab.ns(IN), "nft", "delete", "table", "inet", TABLE))
        for host in (IN4, IN6):
            got = self.finish(self.start_connects(OUT, host, self.listen_port, "hello-again"))
            shown = f"[{host}]" if ":" in host else host
            self.check(f"outside -> inside {shown}:{self.listen_port} (probe listener), rules deleted",
                       got == "connected reply=hello-again", got)
        got = self.finish(self.start_connects(OUT, IN4, self.metrics_port, HEALTHZ))
        self.check(f"outside -> inside {IN4}:{self.metrics_port} (the collector's /healthz), rules deleted",
                   http_ok(got), got)

    def run(self):
        self.setup_network()
        self.start_inside_services()
        self.start_gateway()
        self.control()
        self.apply_firewall()
        self.start_collector()
        accepted = self.data_flows()
        self.reply_is_empty()
        self.blocked(accepted)
        self.rules_removed()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bin_dir = sys.argv[1]
    try:
        netns.require_root_and_tools(("nft", "nftables"), ("ping", "iputils-ping"))
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    netns.require_binaries(bin_dir, "entropy-gateway", "entropy-collector", "entropy-simulator")
    grpcurl = harness.tool("grpcurl")
    if not os.access(grpcurl, os.X_OK):
        raise SystemExit("grpcurl not found (go install github.com/fullstorydev/grpcurl/cmd/grpcurl)")
    netns.interrupt_on_signals()
    try:
        diode = Diode(bin_dir, grpcurl)
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    status = None
    try:
        diode.run()
    except Skip as e:
        status = f"SKIP: {e}"
    except KeyboardInterrupt as e:
        status = f"interrupted ({e or 'SIGINT'})"
    except Exception as e:  # any other error is a failure of the test; say what and where
        diode.check("the test ran to its end", False, f"{type(e).__name__}: {e}")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # let the cleanup finish
        left = diode.lab.cleanup()
    if status and status.startswith("SKIP:"):
        print(status)
        return 0
    diode.section("cleanup")
    diode.check("processes stopped, namespaces, veths and temporary files removed", not left,
                f"left: {left}" if left else "")
    if status:
        print(status)
        return 130
    return diode.check.summary("netns-diode")


if __name__ == "__main__":
    sys.exit(main())
