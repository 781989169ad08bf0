"""The one network-namespace lab of the runs in scripts/lab/ (diode.py, compose_rehearsal.py,
scaleout.py), which need real addresses: each host is a namespace with one veth on a bridge
that lives in a hub namespace, so nothing touches the machine's own network. Processes started
in a host log to a file in the lab's work directory; `cleanup` kills them, everything else left
in the namespaces, and the namespaces themselves.

    require_root_and_tools(("haproxy", "haproxy"))   # else Skip: the run prints SKIP, exits 0
    interrupt_on_signals()                 # SIGTERM, SIGHUP unwind like Ctrl-C: cleanup runs
    lab = Lab("edso", "10.78.0")          # tag (short: it names interfaces) and a /24
    lab.host("gw1", 31)                    # namespace edso<pid>-gw1 with 10.78.0.31/24
    lab.spawn("gw1", "gateway-1", [binary, ...])
    ...
    lab.cleanup()
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import run


class Skip(Exception):
    """This machine cannot run the lab (not root, no namespaces, a tool missing)."""


def nsexec(ns: str, *cmd) -> list[str]:
    return ["ip", "netns", "exec", ns, *map(str, cmd)]


def require_root_and_tools(*tools: tuple[str, str]) -> None:
    """Raises Skip unless this is Linux, root, and every (tool, Debian package) is on PATH."""
    if not sys.platform.startswith("linux"):
        raise Skip("network namespaces need Linux")
    if os.geteuid() != 0:
        raise Skip("not root (network namespaces need root)")
    # ip lives in sbin, which a non-login root environment may leave off PATH.
    path = os.environ.get("PATH", "").split(os.pathsep)
    os.environ["PATH"] = os.pathsep.join(path + [d for d in ("/usr/sbin", "/sbin") if d not in path])
    for tool, package in (("ip", "iproute2"), *tools):
        if not shutil.which(tool):
            raise Skip(f"{tool} not found (Debian package {package})")


def require_binaries(bin_dir: Path, *names: str) -> None:
    """Exits (status 1, saying how to build them) unless BIN_DIR holds every program named."""
    for name in names:
        if not os.access(Path(bin_dir, name), os.X_OK):
            raise SystemExit(f"no {name} in {bin_dir}: cargo build --release --locked")


def interrupt_on_signals() -> None:
    """SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does, so the lab is cleaned up."""
    def interrupt(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)


class Lab:
    def __init__(self, tag: str, subnet24: str, subnet64: str | None = None):
        """Hosts get SUBNET24.n/24, and SUBNET64::n/64 as well where `subnet64` is given."""
        self.tag = f"{tag}{os.getpid() % 100000}"
        self.subnet, self.subnet6 = subnet24, subnet64
        self.hub = f"{self.tag}-hub"
        self.work = Path(tempfile.mkdtemp(prefix=f"{tag}-"))
        self.namespaces: list[str] = []
        self.hosts: dict[str, str] = {}  # host name -> address
        self.hosts6: dict[str, str] = {}  # host name -> IPv6 address (with subnet64)
        self.procs: dict[str, subprocess.Popen] = {}
        self.cgroups: list[Path] = []
        self._ports_given: dict[str, set[int]] = {}  # host name -> ports free_port returned
        self.namespaces.append(self.hub)  # first: a signal may come while `ip netns add` runs
        r = run(["ip", "netns", "add", self.hub], check=False)
        if r.returncode != 0:
            raise Skip(f"cannot create a network namespace: {r.stderr.strip()}")
        run(nsexec(self.hub, "ip", "link", "add", "br0", "type", "bridge"))
        run(nsexec(self.hub, "ip", "link", "set", "br0", "up"))

    def ns(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def host(self, name: str, last_octet: int) -> str:
        """Adds host `name` at SUBNET.last_octet; returns its address."""
        ns, addr = self.ns(name), f"{self.subnet}.{last_octet}"
        self.namespaces.append(ns)
        run(["ip", "netns", "add", ns])
        inner, outer = f"{self.tag}i{last_octet}", f"{self.tag}o{last_octet}"
        run(["ip", "link", "add", inner, "netns", ns, "type", "veth", "peer", "name", outer,
             "netns", self.hub])
        run(nsexec(self.hub, "ip", "link", "set", outer, "master", "br0"))
        run(nsexec(self.hub, "ip", "link", "set", outer, "up"))
        run(nsexec(ns, "ip", "link", "set", "lo", "up"))
        run(nsexec(ns, "ip", "addr", "add", f"{addr}/24", "dev", inner))
        if self.subnet6:
            self.hosts6[name] = f"{self.subnet6}::{last_octet:x}"
            run(nsexec(ns, "ip", "-6", "addr", "add", f"{self.hosts6[name]}/64", "dev", inner, "nodad"))
        run(nsexec(ns, "ip", "link", "set", inner, "up"))
        self.hosts[name] = addr
        return addr

    def free_port(self, host: str) -> int:
        """A TCP port nothing listens on now in `host` (bound on every address, then released),
        never the same one twice for one host: two bind(0)s in a row may get the same port."""
        code = 'import socket; s = socket.socket(); s.bind(("0.0.0.0", 0)); print(s.getsockname()[1])'
        given = self._ports_given.setdefault(host, set())
        while True:
            port = int(run(nsexec(self.ns(host), sys.executable, "-c", code)).stdout)
            if port not in given:
                given.add(port)
                return port

    def spawn(self, host: str, name: str, cmd, env=None, cwd=None, cgroup=False) -> subprocess.Popen:
        """Starts `cmd` in `host`, logging to WORK/name.log; with `cgroup`, in a CPU cgroup of its
        own (v1 `cpu` or v2, where the machine allows) that `set_cpu` can cap."""
        log = open(self.work / f"{name}.log", "w")
        procs_file = self._cgroup(name) if cgroup else None

        def join_cgroup() -> None:  # runs in the child, before exec
            if procs_file is not None:
                procs_file.write_text(str(os.getpid()))

        self.procs[name] = subprocess.Popen(
            nsexec(self.ns(host), *cmd), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
            start_new_session=True, preexec_fn=join_cgroup if procs_file is not None else None)
        log.close()
        return self.procs[name]

    def _cgroup(self, name: str) -> Path | None:
        for root in (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")):
            d = root / f"{self.tag}-{name}"
            try:
                d.mkdir(exist_ok=True)
                if not ((d / "cpu.cfs_quota_us").exists() or (d / "cpu.max").exists()):
                    d.rmdir()
                    continue
            except OSError:
                continue
            if d not in self.cgroups:
                self.cgroups.append(d)
            return d / "cgroup.procs"
        return None

    def set_cpu(self, name: str, cores: float | None) -> bool:
        """Caps process `name` (spawned with `cgroup`) at `cores` of CPU, or lifts the cap (None);
        False where there is no cgroup."""
        period = 100_000
        quota = -1 if cores is None else max(1000, int(cores * period))
        for d in self.cgroups:
            if d.name != f"{self.tag}-{name}":
                continue
            if (d / "cpu.cfs_quota_us").exists():
                (d / "cpu.cfs_quota_us").write_text(str(quota))
            else:
                (d / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {period}")
            return True
        return False

    def log_tail(self, name: str, lines: int = 15) -> str:
        path = self.work / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def exec(self, host: str, *cmd, timeout=60, env=None, cwd=None) -> subprocess.CompletedProcess:
        return run(nsexec(self.ns(host), *cmd), timeout=timeout, check=False, env=env, cwd=cwd)

    def stop(self, name: str, sig=signal.SIGTERM, timeout=20.0) -> int | None:
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(sig)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return None

    def stop_all(self, grace_s: float = 15) -> bool:
        """SIGTERM to every process still running, SIGKILL to those not gone within `grace_s`;
        True when SIGTERM was enough for all."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        stopped = True
        for p in self.procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stopped = False
                p.kill()
                p.wait()
        return stopped

    def cleanup(self) -> list[str]:
        """Stops everything; returns what could not be removed (namespaces, the work directory)."""
        self.stop_all()
        for ns in self.namespaces:
            for pid in run(["ip", "netns", "pids", ns], check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)
        for d in self.cgroups:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        shutil.rmtree(self.work, ignore_errors=True)
        listed = run(["ip", "netns", "list"], check=False).stdout.split()
        return [ns for ns in self.namespaces if ns in listed] + ([str(self.work)] if self.work.exists() else [])
