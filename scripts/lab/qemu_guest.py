#!/usr/bin/env python3
"""A real QEMU guest whose virtio-rng is fed by the feeder's EGD server, and a check that what
the guest reads is what the gateway served, each byte once.

    scripts/lab/qemu_guest.py                      # the real thing (see "Sources")
    scripts/lab/qemu_guest.py --source demo        # feeder/examples/egd_demo.rs, no gateway

What it does:

1. Installs what is missing with apt-get (root): qemu-system-x86 and busybox-static; downloads
   the Debian kernel package that linux-image-amd64 depends on (apt-get download, not installed:
   extracted with dpkg-deb into a cache, QEMU_GUEST_CACHE, default
   /var/tmp/entropy-diode-qemu-guest). Where QEMU, busybox or the kernel cannot be had it prints
   `SKIP: <why>` and exits 0.
2. Builds a tiny initramfs (newc cpio, written here): static busybox, the virtio modules
   virtio-rng needs (from the package's modules, dependencies read from each module's
   `depends=`), and an /init that loads them, reads `--bytes` from /dev/hwrng in `dd` reads of
   `--read-size`, prints them as hex (one line per read) between markers on the serial console,
   and powers off.
3. Boots it under TCG (no KVM needed): `-object rng-egd,chardev=...` on the EGD socket,
   `-device virtio-rng-pci`. QEMU's rng-egd sends EGD command 0x02 (blocking read) with at most
   255 bytes per request.
4. Checks that every guest read is a contiguous run of the bytes the source handed out, and that
   no two reads share a byte (by offset: the runs are located in the source's stream and must
   not overlap). The guest kernel's own hwrng reader (kthread "hwrng", running whatever the
   quality since Linux 6.0) takes a 64-byte fetch now and then for the kernel's pool, between
   two fetches of the device; the hwrng core fetches 64 bytes at a time (x86), so a read of 64
   bytes (the default) is one fetch and one run, and a longer read (a multiple of 64) is
   checked fetch by fetch: 64-byte runs, no two sharing a byte. With the real feeder also: its /metrics (entropy_feeder_egd_served_bytes_total
   between what the guest read and what the gateway sent, no EGD client left after QEMU exits,
   no refusal) and exit status 0 on SIGTERM. Prints boot-to-first-byte time and the guest's
   read rate.

Sources:

- `feeder` (default): the real `entropy-feeder --config X` (kernel_feed = false, egd_socket set)
  against a dev gateway (`entropy-gateway --dev`, copied into the work directory first). What the
  gateway served the feeder is recorded on the wire by a byte-for-byte TCP relay between them
  (this script; the feeder's endpoint is the relay): the gateway's HTTP/2 frames are parsed
  afterwards (plaintext h2c: dev mode), DATA frames put together per stream, gRPC messages
  split, and StreamRandomResponse.data (field 1) concatenated in order. That is the feeder's
  input exactly, independent of the feeder's own code; the feeder may drop some of it (startup
  and health-test discards), never reorder it, so every guest read must still be a run of it.
- `demo`: `egd_demo` (feeder/examples/egd_demo.rs, built if missing): egd::serve with bytes from
  a random file, handing them out in order and recording each hand-out.

`--self-test` checks the checker and the wire parser against made-up input (no QEMU).
Exit status: 0 passed (or SKIP), 1 failed.
"""

from __future__ import annotations

import argparse
import lzma
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
from harness import http_get  # noqa: E402
from ports import free_port  # noqa: E402

CACHE = Path(os.environ.get("QEMU_GUEST_CACHE", "/var/tmp/entropy-diode-qemu-guest"))
MARK = "EGDLAB"
# The modules /init loads (and their dependencies, found in the package).
GUEST_MODULES = ("virtio_pci", "virtio_rng")


class Skip(Exception):
    """This machine cannot run the guest (no QEMU, busybox or kernel to be had)."""


class Failed(Exception):
    """The run went wrong or the check failed."""


def log(msg: str) -> None:
    print(f"[qemu_guest {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- 1. What the guest needs -------------------------------------------------------------------


def apt_install(packages: list[str]) -> None:
    if os.geteuid() != 0:
        raise Skip(f"{', '.join(packages)} missing and not root to apt-get install them")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log(f"installing {' '.join(packages)}")
    if subprocess.run(cmd, env=env, capture_output=True).returncode == 0:
        return
    subprocess.run(["apt-get", "update"], env=env, capture_output=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise Skip(f"apt-get install {' '.join(packages)} failed: {done.stderr.strip()[-300:]}")


def busybox_is_static(path: str) -> bool:
    """A static ELF has no PT_INTERP program header (no dynamic loader path)."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head[:4] != b"\x7fELF" or head[4] != 2:
        return False
    phoff = int.from_bytes(head[32:40], "little")
    phentsize = int.from_bytes(head[54:56], "little")
    phnum = int.from_bytes(head[56:58], "little")
    for i in range(phnum):
        at = phoff + i * phentsize
        if int.from_bytes(head[at : at + 4], "little") == 3:  # PT_INTERP
            return False
    return True


def ensure_tools() -> tuple[str, str]:
    """QEMU and a static busybox, installed when missing."""
    missing = []
    if not shutil.which("qemu-system-x86_64"):
        missing.append("qemu-system-x86")
    busybox = shutil.which("busybox")
    if not busybox or not busybox_is_static(busybox):
        missing.append("busybox-static")
    if missing:
        apt_install(missing)
    qemu = shutil.which("qemu-system-x86_64")
    busybox = shutil.which("busybox")
    if not qemu:
        raise Skip("qemu-system-x86_64 not found after installing qemu-system-x86")
    if not busybox or not busybox_is_static(busybox):
        raise Skip("no static busybox after installing busybox-static")
    return qemu, busybox


def ensure_kernel() -> tuple[Path, Path]:
    """(vmlinuz, modules directory) of the kernel package linux-image-amd64 depends on,
    downloaded (not installed) and extracted into the cache once."""
    deps = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True)
    found = re.search(r"Depends:\s*(linux-image-\S+)", deps.stdout)
    if not found:
        cached = sorted(CACHE.glob("linux-image-*/ok"))
        if not cached:
            raise Skip("apt-cache knows no linux-image-amd64 (and no kernel is cached)")
        package_dir = cached[-1].parent
    else:
        package_dir = CACHE / found.group(1)
    if not (package_dir / "ok").exists():
        package = package_dir.name
        package_dir.mkdir(parents=True, exist_ok=True)
        log(f"downloading {package}")
        with tempfile.TemporaryDirectory(dir=CACHE) as dl:
            os.chmod(dl, 0o777)  # apt-get download runs as _apt where it can
            got = subprocess.run(["apt-get", "download", package], cwd=dl, capture_output=True, text=True)
            debs = list(Path(dl).glob("*.deb"))
            if got.returncode != 0 or not debs:
                raise Skip(f"apt-get download {package} failed: {got.stderr.strip()[-300:]}")
            subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(package_dir / "x")], check=True)
        (package_dir / "ok").write_text("extracted\n")
    vmlinuz = sorted((package_dir / "x" / "boot").glob("vmlinuz-*"))
    modules = sorted((package_dir / "x" / "lib" / "modules").glob("*"))
    if not vmlinuz or not modules:
        raise Failed(f"{package_dir}: no vmlinuz or modules in the package")
    return vmlinuz[0], modules[0]


# --- 2. The initramfs --------------------------------------------------------------------------


def module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".zst"):
        raise Failed(f"{path}: zstd-compressed modules are not supported here")
    return data


def module_closure(moddir: Path, wanted: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """The modules `wanted` and what they depend on, dependencies first, as (name, ELF bytes).
    Built-in ones (modules.builtin) are skipped."""
    index = {p.name.split(".ko")[0].replace("-", "_"): p for p in moddir.rglob("*.ko*")}
    builtin_file = moddir / "modules.builtin"
    builtin = set()
    if builtin_file.exists():
        builtin = {Path(line).name.split(".ko")[0].replace("-", "_") for line in builtin_file.read_text().split()}
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        if name not in index:
            if name in builtin:
                return
            raise Failed(f"module {name} neither in {moddir} nor built in")
        data = module_bytes(index[name])
        deps = re.search(rb"(?:^|\x00)depends=([^\x00]*)\x00", data)
        for dep in (deps.group(1).decode().split(",") if deps and deps.group(1) else []):
            visit(dep.replace("-", "_"))
        order.append((name, data))

    for name in wanted:
        visit(name)
    return order


def cpio_newc(entries: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """An uncompressed newc cpio archive: (path, mode, data, rdev major, rdev minor) each."""
    out = bytearray()

    def pad4() -> None:
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data, rmaj, rmin) in enumerate([*entries, ("TRAILER!!!", 0, b"", 0, 0)], 1):
        namez = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rmaj, rmin, len(namez), 0)
        out.extend(b"070701" + "".join(f"{v:08x}" for v in fields).encode())
        out.extend(namez)
        pad4()
        out.extend(data)
        pad4()
    return bytes(out)


def init_script(modules: list[str], read_size: int, reads: int) -> str:
    insmods = "\n".join(f'insmod /m/{m}.ko || echo "{MARK}-FAIL insmod {m}"' for m in modules)
    return f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs dev /dev
mount -t proc proc /proc
mount -t sysfs sys /sys
echo "{MARK}-BOOTED $(cat /proc/uptime)"
{insmods}
cur=/sys/class/misc/hw_random/rng_current
i=0
while ! grep -q virtio $cur 2>/dev/null && [ $i -lt 300 ]; do i=$((i+1)); sleep 0.1; done
echo "{MARK}-RNG $(cat $cur) hwrng_kthreads=$(ps | grep -c '[[]hwrng[]]')"
dd if=/dev/hwrng of=/first bs={read_size} count=1 2>/dev/null
echo "{MARK}-FIRST $(cat /proc/uptime)"
t0=$(cut -d' ' -f1 /proc/uptime)
dd if=/dev/hwrng of=/data bs={read_size} count={reads} 2>/dd.err
t1=$(cut -d' ' -f1 /proc/uptime)
echo "{MARK}-READ $t0 $t1 $(tr '\\n' ' ' < /dd.err)"
echo "{MARK}-HEX-BEGIN"
hexdump -v -e '{read_size}/1 "%02x" "\\n"' /first /data
echo "{MARK}-HEX-END"
poweroff -f
"""


def build_initramfs(out: Path, busybox: str, moddir: Path, read_size: int, reads: int) -> list[str]:
    modules = module_closure(moddir, GUEST_MODULES)
    names = [name for name, _ in modules]
    d, f, c = 0o040755, 0o100755, 0o020600
    entries = [(p, d, b"", 0, 0) for p in ("bin", "dev", "proc", "sys", "m")]
    entries.append(("dev/console", c, b"", 5, 1))
    entries.append(("bin/busybox", f, Path(busybox).read_bytes(), 0, 0))
    entries += [(f"m/{name}.ko", 0o100644, data, 0, 0) for name, data in modules]
    entries.append(("init", f, init_script(names, read_size, reads).encode(), 0, 0))
    out.write_bytes(cpio_newc(entries))
    return names


# --- 3. The sources: egd_demo, or gateway + relay + feeder -------------------------------------


class Procs:
    """Processes this run started, each logging to a file; stopped (by their own pid) at the end."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict | None = None) -> subprocess.Popen:
        logf = open(self.logdir / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        self.procs[name] = proc
        return proc

    def tail(self, name: str, n: int = 2000) -> str:
        try:
            return (self.logdir / f"{name}.log").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop_one(self, name: str) -> int:
        """SIGTERM to one process; its exit status (killed after 15 s: negative)."""
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for(what: str, cond, timeout_s: float, alive=None) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if alive is not None and not alive():
            raise Failed(f"gave up waiting for {what}: the process exited")
        if time.monotonic() > deadline:
            raise Failed(f"timed out waiting for {what}")
        time.sleep(0.1)


def cargo_target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def start_demo(procs: Procs, work: Path, sock: Path, source_bytes: int) -> callable:
    binary = cargo_target_dir() / "debug" / "examples" / "egd_demo"
    if not binary.exists():
        log("building egd_demo (cargo build -p entropy-feeder --example egd_demo)")
        subprocess.run(["cargo", "build", "-p", "entropy-feeder", "--example", "egd_demo"], cwd=ROOT, check=True)
    source = work / "source.bin"
    source.write_bytes(os.urandom(source_bytes))
    record = work / "record.txt"
    proc = procs.start("egd_demo", [str(binary), "--socket", str(sock), "--source", str(source), "--record", str(record)])
    wait_for("egd_demo's socket", sock.exists, 30, alive=lambda: proc.poll() is None)

    def served() -> bytes:
        """The source's bytes as handed out, in order (the record must be one run from 0)."""
        data = source.read_bytes()
        end = 0
        for line in record.read_text().split("\n"):
            if not line.strip():
                continue
            offset, length = map(int, line.split())
            if offset != end:
                raise Failed(f"egd_demo's record is not in order at {offset} (expected {end})")
            end = offset + length
        return data[:end]

    return served


class RecordingRelay:
    """A TCP relay from 127.0.0.1:port to the gateway that records what the gateway sends (per
    connection, in connection order). It forwards bytes unchanged in both directions."""

    def __init__(self, upstream: tuple[str, int], record_dir: Path):
        self.upstream = upstream
        self.record_dir = record_dir
        self.port = free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.connections = 0
        self.metrics_url = ""
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                index = self.connections
                self.connections += 1
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            record = open(self.record_dir / f"conn-{index:04d}.bin", "wb")
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, record), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, record) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record is not None:
                    record.write(data)
                    record.flush()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if record is not None:
                record.close()
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()

    def served(self) -> bytes:
        """StreamRandomResponse.data of every message the gateway sent, in order."""
        out = bytearray()
        for path in sorted(self.record_dir.glob("conn-*.bin")):
            out += grpc_stream_data(path.read_bytes())
        return bytes(out)


def varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def proto_bytes_field(msg: bytes, field: int) -> bytes:
    """Every occurrence of length-delimited `field` in a protobuf message, concatenated."""
    out = bytearray()
    i = 0
    while i < len(msg):
        key, i = varint(msg, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(msg, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(msg, i)
            if number == field:
                out += msg[i : i + n]
            i += n
        else:
            raise Failed(f"protobuf wire type {wire} in a StreamRandomResponse")
    return bytes(out)


def grpc_stream_data(wire: bytes) -> bytes:
    """The gateway's side of one plaintext HTTP/2 connection -> data of its gRPC messages."""
    streams: dict[int, bytearray] = {}
    i = 0
    while i + 9 <= len(wire):
        length = int.from_bytes(wire[i : i + 3], "big")
        kind, flags = wire[i + 3], wire[i + 4]
        stream_id = int.from_bytes(wire[i + 5 : i + 9], "big") & 0x7FFFFFFF
        payload = wire[i + 9 : i + 9 + length]
        i += 9 + length
        if kind == 0:  # DATA
            if flags & 0x8:  # PADDED
                payload = payload[1 : len(payload) - payload[0]]
            streams.setdefault(stream_id, bytearray()).extend(payload)
    out = bytearray()
    for stream_id in sorted(streams):
        body = streams[stream_id]
        j = 0
        while j + 5 <= len(body):
            compressed, n = body[j], int.from_bytes(body[j + 1 : j + 5], "big")
            if compressed:
                raise Failed("a compressed gRPC message: the check reads uncompressed ones only")
            out += proto_bytes_field(bytes(body[j + 5 : j + 5 + n]), 1)
            j += 5 + n
    return bytes(out)


def start_feeder(procs: Procs, work: Path, sock: Path, gateway_bin: Path, feeder_bin: Path) -> RecordingRelay:
    if not os.access(gateway_bin, os.X_OK):
        raise Failed(f"no gateway binary at {gateway_bin} (--gateway-bin)")
    if not os.access(feeder_bin, os.X_OK):
        raise Failed(f"no feeder binary at {feeder_bin} (--feeder-bin; cargo build --release -p entropy-feeder)")
    gateway_copy = work / "entropy-gateway"
    shutil.copy2(gateway_bin, gateway_copy)
    key = "egdlab-" + secrets.token_hex(16)
    port = free_port()
    gateway = procs.start(
        "gateway",
        [str(gateway_copy), "--dev", "--listen-addr", f"127.0.0.1:{port}", "--metrics-listen-addr", ""],
        env=dict(os.environ, ENTROPY_DEV_API_KEY=key),
    )

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    wait_for("the dev gateway", listening, 60, alive=lambda: gateway.poll() is None)
    relay_dir = work / "wire"
    relay_dir.mkdir()
    relay = RecordingRelay(("127.0.0.1", port), relay_dir)
    config = work / "feeder.toml"
    metrics_port = free_port()
    config.write_text(
        f'gateway_endpoint = "http://127.0.0.1:{relay.port}"\n'
        "kernel_feed = false\n"
        f'egd_socket = "{sock}"\n'
        f'metrics_listen_addr = "127.0.0.1:{metrics_port}"\n'
    )
    feeder = procs.start("feeder", [str(feeder_bin), "--config", str(config)], env=dict(os.environ, ENTROPY_API_KEY=key))
    wait_for("the feeder's EGD socket", sock.exists, 60, alive=lambda: feeder.poll() is None)
    relay.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    return relay


def scrape(url: str) -> dict[str, float]:
    """Prometheus text -> {series: value} (series as written, labels included)."""
    status, body = http_get(url)
    if status != 200:
        raise Failed(f"GET {url}: {status} {body[:200]}")
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            try:
                out[series] = float(value)
            except ValueError:
                pass
    return out


def check_feeder_metrics(url: str, guest_bytes: int, wire_bytes: int) -> list[str]:
    """The EGD series: bytes served at least what the guest read and at most what the gateway
    sent; no client left once QEMU is gone; no connection refused."""
    problems = []
    deadline = time.monotonic() + 10
    while True:
        m = scrape(url)
        if m.get("entropy_feeder_egd_clients") == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    served = m.get("entropy_feeder_egd_served_bytes_total")
    log(f"feeder metrics: egd_served_bytes_total {served}, egd_clients {m.get('entropy_feeder_egd_clients')}, "
        f"received_bytes_total {m.get('entropy_feeder_received_bytes_total')}")
    if served is None or not guest_bytes <= served <= wire_bytes:
        problems.append(f"entropy_feeder_egd_served_bytes_total {served}: not between {guest_bytes} and {wire_bytes}")
    if m.get("entropy_feeder_egd_clients") != 0:
        problems.append(f"entropy_feeder_egd_clients {m.get('entropy_feeder_egd_clients')} after QEMU exited")
    refused = {k: v for k, v in m.items() if k.startswith("entropy_feeder_egd_refused_total") and v}
    if refused:
        problems.append(f"EGD refusals: {refused}")
    return problems


# --- 4. Boot, read, check ----------------------------------------------------------------------


def boot(qemu: str, vmlinuz: Path, initrd: Path, sock: Path, timeout_s: float, serial_log: Path) -> dict:
    """Boots the guest; returns its hex lines and host-side timings (seconds since QEMU started)."""
    argv = [
        qemu, "-accel", "tcg", "-m", "256", "-smp", "1", "-nodefaults", "-display", "none", "-no-reboot",
        "-serial", "stdio",
        "-kernel", str(vmlinuz), "-initrd", str(initrd),
        "-append", "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init",
        "-chardev", f"socket,id=egd,path={sock},reconnect=1",
        "-object", "rng-egd,id=rng0,chardev=egd",
        "-device", "virtio-rng-pci,rng=rng0",
    ]
    log("booting: " + " ".join(argv))
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    result = {"hex": [], "marks": {}, "lines": {}, "other_in_hex": 0}
    in_hex = False
    assert proc.stdout is not None
    with open(serial_log, "w") as serial:
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            serial.write(line + "\n")
            now = time.monotonic() - started
            if line.startswith(f"{MARK}-"):
                tag = line.split()[0][len(MARK) + 1 :]
                result["marks"].setdefault(tag, now)
                result["lines"].setdefault(tag, line)
                in_hex = tag == "HEX-BEGIN"
                continue
            if in_hex:
                if re.fullmatch(r"[0-9a-f]+", line) and len(line) % 2 == 0:
                    result["hex"].append(bytes.fromhex(line))
                elif line:
                    result["other_in_hex"] += 1
    proc.wait()
    timer.cancel()
    result["killed"] = proc.returncode not in (0,) and "HEX-END" not in result["marks"]
    result["total_s"] = time.monotonic() - started
    return result


FETCH = 64  # the guest's hwrng core fetches this much from the device at a time (x86)


def check(reads: list[bytes], served: bytes, read_size: int, expected_reads: int) -> list[str]:
    """Problems found: each read (each fetch of a read longer than FETCH) a run of `served`, no
    two runs overlapping."""
    problems = []
    if len(reads) != expected_reads:
        problems.append(f"{len(reads)} reads printed, {expected_reads} expected")
    short = [i for i, r in enumerate(reads) if len(r) != read_size]
    if short:
        problems.append(f"{len(short)} reads of other than {read_size} bytes (first: read {short[0]})")
    unit = "read"
    if read_size > FETCH:
        reads = [r[j : j + FETCH] for r in reads for j in range(0, len(r), FETCH)]
        unit = f"fetch ({FETCH} bytes)"
    runs = []
    hint = 0
    for i, r in enumerate(reads):
        at = served.find(r, hint)
        if at < 0:
            at = served.find(r)
        if at < 0:
            problems.append(f"{unit} {i} ({r[:8].hex()}...) is not a run of the bytes served")
            continue
        runs.append((at, at + len(r), i))
        hint = at + len(r)
    runs.sort()
    for (a0, a1, ia), (b0, b1, ib) in zip(runs, runs[1:]):
        if b0 < a1:
            problems.append(f"{unit} {ia} and {ib} share bytes (offsets {a0}..{a1} and {b0}..{b1})")
    return problems


def self_test() -> int:
    """The checker and the wire parser against made-up input: each must catch what it is for."""
    served = os.urandom(64 * 40)
    good = [served[i * 64 : (i + 1) * 64] for i in (3, 0, 7, 8, 20)]
    cases = [
        ("good reads", good, 0),
        ("a read twice", good + [good[1]], 1),
        ("overlapping reads", good + [served[7 * 64 + 10 : 8 * 64 + 10]], 1),
        ("a read not served", good + [os.urandom(64)], 1),
        ("a read spanning a gap", good + [served[100:132] + served[300:332]], 1),
    ]
    long_reads = [served[0:256], served[320:448] + served[512:640]]
    cases_long = [
        ("long reads, fetches with gaps between", long_reads, 0),
        ("long reads, a gap inside a fetch", long_reads + [served[1024:1056] + served[1100:1324]], 1),
        ("long reads sharing a fetch", long_reads + [served[1024:1152] + served[576:704]], 1),
    ]
    failed = 0
    for name, reads, want_problems in [*cases, *cases_long]:
        got = check(reads, served, len(reads[0]), len(reads))
        ok = bool(got) == bool(want_problems)
        failed += not ok
        print(f"{'ok' if ok else 'WRONG'}: {name}: {got or 'no problem'}")

    def frame(kind: int, flags: int, stream_id: int, payload: bytes) -> bytes:
        return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream_id.to_bytes(4, "big") + payload

    def message(data: bytes) -> bytes:
        provenance = b"\x12\x03\x08\x96\x01"  # field 2: a nested message
        body = b"\x0a" + bytes([0x80 | (len(data) & 0x7F), len(data) >> 7]) + data + provenance
        return b"\x00" + len(body).to_bytes(4, "big") + body

    a, b = os.urandom(300), os.urandom(200)
    grpc = message(a) + message(b)
    wire = frame(4, 0, 0, b"\x00" * 6) + frame(1, 4, 1, b"\x88")
    wire += frame(0, 0, 1, grpc[:100]) + frame(8, 0, 0, b"\x00" * 4)
    wire += frame(0, 8, 1, bytes([3]) + grpc[100:250] + b"\x00" * 3) + frame(0, 0, 1, grpc[250:])
    ok = grpc_stream_data(wire) == a + b
    failed += not ok
    print(f"{'ok' if ok else 'WRONG'}: HTTP/2 DATA frames (split, padded) -> StreamRandomResponse.data")
    return 1 if failed else 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", choices=("feeder", "demo"), default="feeder")
    ap.add_argument("--bytes", type=int, default=64 << 10, help="bytes the guest reads (default 64 KiB)")
    ap.add_argument("--read-size", type=int, default=64, help="bytes per dd read (default 64)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds the guest may run")
    ap.add_argument("--feeder-bin", type=Path, default=cargo_target_dir() / "release" / "entropy-feeder")
    ap.add_argument("--gateway-bin", type=Path, default=ROOT / "target" / "release" / "entropy-gateway")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--self-test", action="store_true", help="check the checker on made-up input, then exit")
    args = ap.parse_args()
    if args.bytes % args.read_size or not (1 <= args.read_size <= FETCH or args.read_size % FETCH == 0):
        ap.error(f"--read-size must be 1..={FETCH} or a multiple of {FETCH}, --bytes a multiple of it")
    reads = args.bytes // args.read_size

    try:
        qemu, busybox = ensure_tools()
        vmlinuz, moddir = ensure_kernel()
    except Skip as why:
        print(f"SKIP: {why}")
        return 0

    work = Path(tempfile.mkdtemp(prefix="qemu-guest-"))
    procs = Procs(work)
    try:
        initrd = work / "initramfs.cpio"
        modules = build_initramfs(initrd, busybox, moddir, args.read_size, reads)
        log(f"kernel {vmlinuz.name}; initramfs {initrd.stat().st_size >> 10} KiB with {', '.join(modules)}")
        sock = work / "egd.sock"
        if args.source == "demo":
            served = start_demo(procs, work, sock, args.bytes * 8 + (1 << 20))
        else:
            served = start_feeder(procs, work, sock, args.gateway_bin, args.feeder_bin)
        run = boot(qemu, vmlinuz, initrd, sock, args.timeout, work / "serial.log")
        marks = run["marks"]
        for tag in ("RNG", "READ"):
            if tag in run["lines"]:
                log(run["lines"][tag])
        if "HEX-END" not in marks:
            raise Failed(f"the guest did not finish (see {work}/serial.log): marks {sorted(marks)}")
        source_bytes = served() if args.source == "demo" else served.served()
        guest_reads = run["hex"]
        problems = check(guest_reads, source_bytes, args.read_size, reads + 1)
        read_line = run["lines"]["READ"].split()
        guest_s = float(read_line[2]) - float(read_line[1])
        host_s = marks["READ"] - marks["FIRST"]
        origin = "the gateway sent toward the feeder (recorded on the wire)" if args.source == "feeder" \
            else "egd_demo handed out"
        print(f"source: {args.source}; guest reads: {len(guest_reads)} x {args.read_size} bytes; "
              f"{origin}: {len(source_bytes)} bytes")
        print(f"boot to first byte: {marks['FIRST']:.2f} s (QEMU start to the first read done, host clock); "
              f"guest booted (init ran) at {marks.get('BOOTED', float('nan')):.2f} s")
        print(f"read rate: {args.bytes / guest_s / 1024:.1f} KiB/s by the guest's clock ({guest_s:.2f} s), "
              f"{args.bytes / host_s / 1024:.1f} KiB/s by the host's ({host_s:.2f} s) for {args.bytes} bytes")
        print(f"whole run: {run['total_s']:.1f} s")
        if run["other_in_hex"]:
            print(f"note: {run['other_in_hex']} console lines among the hex were not hex (kernel messages?)")
        if args.source == "feeder":
            problems += check_feeder_metrics(served.metrics_url, len(guest_reads) * args.read_size, len(source_bytes))
            status = procs.stop_one("feeder")
            if status != 0:
                problems.append(f"entropy-feeder exited {status} on SIGTERM (0 expected)")
        if problems:
            for p in problems:
                print(f"FAIL: {p}")
            print(f"work directory kept: {work}")
            args.keep = True
            return 1
        what = "read" if args.read_size <= FETCH else f"{FETCH}-byte fetch of every read"
        print(f"PASS: every guest {what} is a run of the bytes served, and no byte was read twice")
        return 0
    except Failed as e:
        print(f"FAIL: {e}")
        for name in procs.procs:
            print(f"--- {name} log tail ---\n{procs.tail(name)}")
        print(f"work directory kept: {work}")
        args.keep = True
        return 1
    finally:
        procs.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
