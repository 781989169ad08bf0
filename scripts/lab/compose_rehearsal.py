#!/usr/bin/env python3
"""compose.yaml rehearsed without Docker: the simulator, collector and gateway services run
as compose would run them, from compose-go's reading of compose.yaml (deploy/check -emit):

- each service in a network namespace of its own (a host of the namespace lab, netns.py),
  joined to the lab's bridge, which stands for the `internal` network (172.30.52.0/24, the gateway at its fixed address), with an /etc/hosts
  naming the services it shares a network with, as Docker's DNS would;
- each in a mount namespace where its compose `configs:` and `secrets:` appear at their
  container paths (/etc/entropy/..., /run/secrets/...) with the modes deploy/gen-secrets.sh
  gave them, over an /etc and /run of its own, and its named `volumes:` (the gateway's
  state_dir) as writable directories owned by its user, as Docker initializes them from the
  image;
- the image's entrypoint (deploy/Dockerfile) with the service's command, as the service's
  user, with no capabilities and no_new_privs, on a read-only root filesystem.

Then: every service's compose health check passes; a client draws entropy over TLS from the
gateway; GetStatus names the simulated appliance; each process runs as its non-root user with
no capabilities; SIGTERM stops everything. What this does not cover: image builds, resource
limits, Prometheus and Grafana
(scripts/deploy/prometheus_scrape.py runs a real Prometheus against the same programs).

Kept because nothing else runs compose.yaml's own definition (users, read-only roots,
capabilities, mounts and networks as compose-go reads them): deploy/check validates the file
statically, prometheus_scrape.py runs the programs without compose's constraints.

Usage: scripts/lab/compose_rehearsal.py BIN_DIR
Needs root, ip (iproute2), unshare and setpriv (util-linux), Go, grpcurl. Prints "SKIP: why"
and exits 0 where namespaces cannot be made; any other failure exits 1.
"""
import json
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))  # harness.py, shared by every suite
import harness  # noqa: E402
from harness import ROOT, run  # noqa: E402

import netns  # noqa: E402
from netns import Skip  # noqa: E402

SUBNET = "172.30.52"  # compose.yaml's `internal` network, a /24
SERVICES = ("simulator", "gateway", "collector")  # Prometheus and Grafana are pulled images
check = harness.Checks()


def entrypoints():
    """Image target -> ENTRYPOINT argv, from deploy/Dockerfile."""
    out, stage = {}, None
    for line in (ROOT / "deploy/Dockerfile").read_text().splitlines():
        m = re.match(r"FROM\s+\S+\s+AS\s+(\S+)", line, re.I)
        if m:
            stage = m.group(1)
        m = re.match(r"ENTRYPOINT\s+(\[.*\])", line)
        if m and stage:
            out[stage] = json.loads(m.group(1))
    return out


class Rehearsal:
    def __init__(self, bin_dir):
        self.bin_dir = Path(bin_dir).resolve()
        self.lab = netns.Lab("edr", SUBNET)
        self.work = self.lab.work
        self.work.chmod(0o755)  # the services' users read their staged files and volumes below it
        self.started = False

    def load(self):
        secrets = self.work / "secrets"
        r = harness.gen_secrets(self.bin_dir, secrets)
        if r.returncode != 0:
            raise RuntimeError(f"deploy/gen-secrets.sh: {r.stderr.strip()}")
        emitted = self.work / "services.json"
        r = run(["go", "run", ".", "-root", ROOT, "-secrets", secrets, "-emit", emitted],
                cwd=ROOT / "deploy/check", check=False, timeout=300)
        if not check("deploy/check reads compose.yaml", r.returncode == 0, r.stdout + r.stderr):
            return False
        self.services = {k: v for k, v in json.loads(emitted.read_text()).items() if k in SERVICES}
        self.secrets = secrets
        eps = entrypoints()
        for name, svc in self.services.items():
            argv = (svc["entrypoint"] or eps[svc["build_target"]]) + (svc["command"] or [])
            # The image holds the binaries in /usr/local/bin; here they come from BIN_DIR.
            argv[0] = str(self.bin_dir / Path(argv[0]).name)
            svc["argv"] = argv
        # Addresses on the internal network: the fixed ones from compose, the others in turn.
        used = {s["networks"].get("internal") for s in self.services.values()}
        host = 20
        for name in SERVICES:
            net = self.services[name]["networks"]
            if "internal" not in net:
                raise RuntimeError(f"{name} is not on the internal network")
            if not net["internal"]:
                while f"{SUBNET}.{host}" in used:
                    host += 1
                net["internal"] = f"{SUBNET}.{host}"
                used.add(net["internal"])
        return True

    def network(self):
        for name in SERVICES:
            addr = self.services[name]["networks"]["internal"]
            prefix, _, last = addr.rpartition(".")
            if prefix != SUBNET:
                raise RuntimeError(f"{name}'s address {addr} is not in {SUBNET}.0/24")
            self.lab.host(name, int(last))
        print(f"internal network: bridge in {self.lab.hub}; " +
              ", ".join(f"{n} {self.services[n]['networks']['internal']}" for n in SERVICES), flush=True)

    def stage(self, name):
        """The service's own /etc and /run: its compose mounts, hosts, and what libc needs."""
        svc = self.services[name]
        base = self.work / "rootfs" / name
        etc, runs = base / "etc", base / "run"
        for d in (etc, runs):
            d.mkdir(parents=True, mode=0o755)
        for f in ("nsswitch.conf", "passwd", "group", "host.conf"):
            if Path("/etc", f).exists():
                shutil.copy(Path("/etc", f), etc / f)
        (etc / "resolv.conf").write_text("")
        hosts = ["127.0.0.1 localhost", "::1 localhost"]
        for other, o in self.services.items():
            if set(o["networks"]) & set(svc["networks"]):
                hosts.append(f"{o['networks']['internal']} {other}")
        (etc / "hosts").write_text("\n".join(hosts) + "\n")
        if Path("/etc/ssl/certs/ca-certificates.crt").exists():
            (etc / "ssl/certs").mkdir(parents=True)
            shutil.copy("/etc/ssl/certs/ca-certificates.crt", etc / "ssl/certs/ca-certificates.crt")
        for target, source in svc["mounts"].items():
            for prefix, into in (("/etc/", etc), ("/run/", runs)):
                if target.startswith(prefix):
                    dest = into / target[len(prefix):]
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    for d in [dest.parent, *dest.parent.parents]:
                        if d == base:
                            break
                        d.chmod(0o755)
                    shutil.copy(source, dest)  # keeps the mode gen-secrets.sh gave it
        return etc, runs

    def volumes(self, name):
        """Shell commands mounting the service's named volumes: a directory per volume, owned
        by the service's user (the image makes its mount points so), over a tmpfs on the parent
        so nothing is created on the host's own root."""
        svc = self.services[name]
        uid, _, gid = svc["user"].partition(":")
        cmds = []
        for target, volume in sorted(svc.get("volumes", {}).items()):
            host = self.work / "volumes" / volume
            host.mkdir(parents=True, exist_ok=True)
            os.chown(host, int(uid), int(gid or uid))
            host.chmod(0o700)
            parent = str(Path(target).parent)
            cmds.append(f"mount -t tmpfs -o mode=0755 tmpfs {parent} && mkdir {target} && "
                        f"mount --bind {host} {target} && mount -o remount,bind,ro {parent} && ")
        return "".join(cmds)

    def start(self, name):
        svc = self.services[name]
        etc, runs = self.stage(name)
        uid, _, gid = svc["user"].partition(":")
        # read_only: true; in this private mount namespace only (the host's mounts stay as they are).
        setup = (f"mount --bind {etc} /etc && mount --bind {runs} /run && " + self.volumes(name) +
                 "mount -o remount,bind,ro / && mount -o remount,bind,ro /etc && mount -o remount,bind,ro /run && "
                 f"exec setpriv --reuid {uid} --regid {gid or uid} --clear-groups --inh-caps=-all "
                 f"--bounding-set=-all --no-new-privs -- " + " ".join(map(shlex.quote, svc["argv"])))
        self.lab.spawn(name, name, ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup])
        self.started = True

    def healthcheck(self, name):
        """The service's compose health check, in its network namespace."""
        test = list(self.services[name]["healthcheck"])
        if test[0] == "CMD":
            test = test[1:]
        test = [str(ROOT / "deploy/healthcheck.sh") if a == "/usr/local/bin/healthcheck.sh" else a for a in test]
        return self.lab.exec(name, *test, timeout=15)

    def grpcurl(self, method, data):
        key = (self.secrets / "client-api-key").read_text().strip()
        return self.lab.exec("gateway", harness.tool("grpcurl"), "-cacert", self.secrets / "ca.pem",
                             "-H", f"authorization: Bearer {key}", "-d", json.dumps(data), "localhost:50051", method)

    def rehearse(self):
        if not self.load():
            return
        self.network()
        for name in SERVICES:  # compose order: depends_on
            self.start(name)
        deadline = time.monotonic() + 60
        for name in SERVICES:
            while True:
                r = self.healthcheck(name)
                if r.returncode == 0 or time.monotonic() > deadline or self.lab.procs[name].poll() is not None:
                    break
                time.sleep(1)
            check(f"{name}: its compose health check ({' '.join(self.services[name]['healthcheck'][2:])}) passes",
                  r.returncode == 0, f"{r.stderr.strip()} | log: {self.lab.log_tail(name)}")
        for name, p in self.lab.procs.items():
            status = Path(f"/proc/{p.pid}/status").read_text() if p.poll() is None else ""
            fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
            uid = self.services[name]["user"].partition(":")[0]
            mountinfo = Path(f"/proc/{p.pid}/mountinfo").read_text() if p.poll() is None else ""
            read_only = {m.split()[4]: m.split()[5].startswith("ro") for m in mountinfo.splitlines()}
            check(f"{name}: read-only root filesystem, /etc and /run",
                  read_only and all(read_only.get(d) for d in ("/", "/etc", "/run")), json.dumps(read_only)[:300])
            check(f"{name}: runs as uid {uid}, no capabilities, no_new_privs",
                  fields.get("Uid", "").split()[:1] == [uid] and fields.get("CapEff", "").strip() == "0" * 16
                  and fields.get("CapBnd", "").strip() == "0" * 16 and fields.get("NoNewPrivs", "").strip() == "1",
                  f"Uid {fields.get('Uid')} CapEff {fields.get('CapEff')} CapBnd {fields.get('CapBnd')} "
                  f"NoNewPrivs {fields.get('NoNewPrivs')}")
        gateway = self.services["gateway"]
        volume = gateway.get("volumes", {}).get("/var/lib/entropy-gateway", "none")
        lease = self.work / "volumes" / volume / "ingest-lease"
        check("gateway: its ingest lease is on its named volume (state_dir), written by its user",
              lease.is_file() and lease.stat().st_uid == int(gateway["user"].partition(":")[0]), str(lease))
        r = self.grpcurl("entropy.v1.EntropyService/GetRandom", {"num_bytes": 32, "encoding": "ENCODING_HEX"})
        text = json.loads(r.stdout).get("text", "") if r.returncode == 0 else ""
        check("a client draws 32 bytes over TLS with the demo key", len(text) == 64, r.stderr)
        r = self.grpcurl("entropy.v1.EntropyService/GetStatus", {})
        sources = json.loads(r.stdout).get("sources", []) if r.returncode == 0 else []
        check("GetStatus: the simulated appliance feeds the pool, healthy",
              any(s.get("name") == "quantis-sim" and s.get("health") == "SOURCE_HEALTH_HEALTHY" for s in sources),
              r.stderr or json.dumps(sources))

    def cleanup(self):
        """Stops the services as compose does (SIGTERM, SIGKILL after the stop grace period),
        prints their logs if a check failed, and removes the lab; returns what is left."""
        stopped = self.lab.stop_all(grace_s=15)  # compose's stop_grace_period
        if self.started:
            check("SIGTERM stops every service within the stop grace period", stopped)
        if check.failed:
            for name in self.lab.procs:
                print(f"--- {name} log (tail) ---\n{self.lab.log_tail(name, 30)}")
        return self.lab.cleanup()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    try:
        netns.require_root_and_tools(("unshare", "util-linux"), ("setpriv", "util-linux"))
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    if not shutil.which("go"):
        raise SystemExit("go not found on PATH")
    if not os.access(harness.tool("grpcurl"), os.X_OK):
        raise SystemExit("grpcurl not found (go install github.com/fullstorydev/grpcurl/cmd/grpcurl)")
    netns.require_binaries(sys.argv[1], "entropy-gateway", "entropy-collector", "entropy-simulator")
    netns.interrupt_on_signals()
    try:
        rehearsal = Rehearsal(sys.argv[1])
    except Skip as e:
        print(f"SKIP: {e}")
        return 0
    try:
        rehearsal.rehearse()
    except Exception as e:  # reported as a failure, after cleaning up
        check("rehearsal ran", False, f"{type(e).__name__}: {e}")
    finally:
        left = rehearsal.cleanup()
    check("processes stopped, namespaces and temporary files removed", not left, left)
    return check.summary("compose rehearsal")


if __name__ == "__main__":
    sys.exit(main())
