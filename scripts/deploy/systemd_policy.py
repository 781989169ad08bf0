#!/usr/bin/env python3
"""Policy of the feeder's systemd units and example config (deploy/systemd/), what
`systemd-analyze verify` cannot say: both units keep their hardening lines, hold CAP_SYS_ADMIN
and nothing else, run as the entropy-feeder user, take the API key as a credential (never in
Environment=), reach only /dev/random; the boot unit fails open (SuccessExitStatus=75) after
network-online.target; the example config names only the feeder's keys, dials the gateway over
TLS and puts the EGD socket in the daemon's RuntimeDirectory.

Usage: scripts/deploy/systemd_policy.py [DIR]     (default deploy/systemd)
       scripts/deploy/systemd_policy.py --self-test
--self-test plants one fault at a time in a copy of the files and requires each to be named.
Exits 1 with every problem listed.
"""
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAEMON, BOOT, CONFIG = "entropy-feeder.service", "entropy-feeder-boot.service", "feeder.toml"

# The feeder's config keys (the contract: README.md "Feeding a machine's kernel and its VMs"
# and docs/operations.md). The binary's own --print-config checks values when it is built.
CONFIG_KEYS = {
    "gateway_endpoint", "api_key_file", "ca_file", "chunk_bytes", "buffer_bytes",
    "min_entropy_bits_per_byte", "kernel_feed", "random_device", "feed_bytes",
    "credit_bits_per_byte", "refresh_interval_ms", "egd_socket", "egd_socket_mode",
    "egd_max_clients", "egd_idle_timeout_ms", "metrics_listen_addr", "boot_timeout_ms",
    "log_format",
}

# Lines each unit must hold exactly (key, value): the confinement.
HARDENING = [
    ("Service", "User", "entropy-feeder"),
    ("Service", "Group", "entropy-feeder"),
    ("Service", "CapabilityBoundingSet", "CAP_SYS_ADMIN"),
    ("Service", "AmbientCapabilities", "CAP_SYS_ADMIN"),
    ("Service", "NoNewPrivileges", "yes"),
    ("Service", "ProtectSystem", "strict"),
    ("Service", "ProtectHome", "yes"),
    ("Service", "PrivateTmp", "yes"),
    ("Service", "PrivateDevices", "yes"),
    ("Service", "DevicePolicy", "closed"),
    ("Service", "DeviceAllow", "/dev/random rw"),
    ("Service", "RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
    ("Service", "SystemCallFilter", "@system-service"),
    ("Service", "SystemCallFilter", "~@privileged @resources @mount"),
    ("Service", "SystemCallArchitectures", "native"),
    ("Service", "MemoryDenyWriteExecute", "yes"),
    ("Service", "LockPersonality", "yes"),
    ("Service", "RestrictNamespaces", "yes"),
    ("Service", "RestrictSUIDSGID", "yes"),
    ("Service", "ProtectKernelTunables", "yes"),
    ("Service", "ProtectKernelModules", "yes"),
    ("Service", "ProtectControlGroups", "yes"),
    ("Service", "LoadCredential", "api-key:/etc/entropy-feeder/api-key"),
    ("Service", "Environment", "ENTROPY_FEEDER_API_KEY_FILE=%d/api-key"),
    ("Unit", "Wants", "network-online.target"),
]
# Keys whose every value is held to one list (no second DeviceAllow, no extra capability).
ONLY = {
    "CapabilityBoundingSet": {"CAP_SYS_ADMIN"},
    "AmbientCapabilities": {"CAP_SYS_ADMIN"},
    "DeviceAllow": {"/dev/random rw"},
    "RestrictAddressFamilies": {"AF_INET AF_INET6 AF_UNIX"},
    "SystemCallFilter": {"@system-service", "~@privileged @resources @mount"},
}
# Settings that would break the feeder or undo the confinement.
FORBIDDEN = {
    # CAP_SYS_ADMIN must be held in the initial user namespace for RNDADDENTROPY.
    "PrivateUsers": "PrivateUsers= puts the service in a user namespace: RNDADDENTROPY needs CAP_SYS_ADMIN in the initial one",
    "DynamicUser": "DynamicUser=: the EGD socket's group must be a stable one QEMU's user can join",
    "PermissionsStartOnly": "PermissionsStartOnly= is deprecated and runs commands unconfined",
}


def parse_unit(text):
    """[(section, key, value)] of a unit file, in order; keys may repeat."""
    out, section = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        key, sep, value = line.partition("=")
        if not sep or section is None:
            raise ValueError(f"not a unit line: {raw!r}")
        out.append((section, key.strip(), value.strip()))
    return out


def values(lines, section, key):
    return [v for s, k, v in lines if s == section and k == key]


def check_unit(name, lines, problems):
    def fail(msg):
        problems.append(f"{name}: {msg}")

    for section, key, want in HARDENING:
        if want not in values(lines, section, key):
            fail(f"[{section}] {key}={want} is missing")
    for key, allowed in ONLY.items():
        for v in values(lines, "Service", key):
            if v not in allowed:
                fail(f"{key}={v}: only {sorted(allowed)} allowed")
    for key, why in FORBIDDEN.items():
        if values(lines, "Service", key):
            fail(why)
    if "network-online.target" not in " ".join(values(lines, "Unit", "After")):
        fail("not ordered After=network-online.target (it dials the gateway)")
    for v in values(lines, "Service", "Environment"):
        if re.search(r"(^|\s)ENTROPY_API_KEY=", v):
            fail("the API key in Environment= (systemctl show prints it); use LoadCredential=")
    execs = values(lines, "Service", "ExecStart")
    if len(execs) != 1 or not execs[0].startswith(
            "/usr/local/bin/entropy-feeder --config /etc/entropy-feeder/feeder.toml"):
        fail(f"ExecStart {execs} is not /usr/local/bin/entropy-feeder --config /etc/entropy-feeder/feeder.toml ...")
    for key in ("ExecStartPre", "ExecStartPost", "ExecStop"):
        for v in values(lines, "Service", key):
            if v.startswith(("+", "!")):
                fail(f"{key}={v} runs with full privileges")
    return execs[0] if execs else ""


def check(d):
    problems = []
    units = {}
    for name in (DAEMON, BOOT):
        try:
            units[name] = parse_unit((d / name).read_text())
        except (OSError, ValueError) as e:
            problems.append(f"{name}: {e}")
    if len(units) < 2:
        return problems
    daemon, boot = units[DAEMON], units[BOOT]
    check_unit(DAEMON, daemon, problems)
    boot_exec = check_unit(BOOT, boot, problems)

    if " --boot " not in f" {boot_exec} ":
        problems.append(f"{BOOT}: ExecStart has no --boot BYTES")
    for section, key, want in [("Service", "Type", "oneshot"), ("Service", "SuccessExitStatus", "75")]:
        if want not in values(boot, section, key):
            problems.append(f"{BOOT}: {key}={want} is missing (exit 75 is a timed-out boot feed: fail open)")
    if values(boot, "Install", "RequiredBy") or values(boot, "Unit", "RequiredBy"):
        problems.append(f"{BOOT}: RequiredBy= would let a failed feed stop other units; order them with Before= only")
    if DAEMON not in " ".join(values(boot, "Unit", "Before")):
        problems.append(f"{BOOT}: not Before={DAEMON} (both would stream at once)")
    if "network-online.target" not in " ".join(values(daemon, "Unit", "After")):
        problems.append(f"{DAEMON}: not After=network-online.target")
    if "entropy-feeder" not in values(daemon, "Service", "RuntimeDirectory"):
        problems.append(f"{DAEMON}: RuntimeDirectory=entropy-feeder is missing (the EGD socket's directory)")
    if values(daemon, "Service", "RuntimeDirectoryMode") != ["0750"]:
        problems.append(f"{DAEMON}: RuntimeDirectoryMode must be 0750 (the socket group's way in, nobody else's)")

    try:
        cfg = tomllib.loads((d / CONFIG).read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        problems.append(f"{CONFIG}: {e}")
        return problems
    unknown = sorted(set(cfg) - CONFIG_KEYS)
    if unknown:
        problems.append(f"{CONFIG}: unknown keys {unknown}")
    for k in cfg:
        if re.search(r"(^|_)(api_key|key|secret|token)$", k) and k != "api_key_file":
            problems.append(f"{CONFIG}: {k}: secrets never go in the config")
    if not str(cfg.get("gateway_endpoint", "")).startswith("https://"):
        problems.append(f"{CONFIG}: gateway_endpoint must be https:// (plaintext is for development)")
    if cfg.get("api_key_file"):
        problems.append(f"{CONFIG}: api_key_file is set; the units point ENTROPY_FEEDER_API_KEY_FILE at their credential")
    sock = cfg.get("egd_socket", "")
    if sock and not sock.startswith("/run/entropy-feeder/"):
        problems.append(f"{CONFIG}: egd_socket {sock} is not in /run/entropy-feeder (the only directory the unit may write)")
    if sock and cfg.get("egd_socket_mode", "0660") not in ("0660", "0600"):
        problems.append(f"{CONFIG}: egd_socket_mode {cfg.get('egd_socket_mode')}: at most group access (0660)")
    metrics = cfg.get("metrics_listen_addr", "127.0.0.1:9466")
    if metrics and not metrics.startswith(("127.", "[::1]")):
        problems.append(f"{CONFIG}: metrics_listen_addr {metrics} is not loopback")
    credit = cfg.get("credit_bits_per_byte", 2)
    if not 0 <= credit <= 8:
        problems.append(f"{CONFIG}: credit_bits_per_byte {credit} outside 0..=8")
    return problems


# Planted faults: (file, old, new, expected problem). Each must be found on its own.
MUTANTS = [
    (DAEMON, "CapabilityBoundingSet=CAP_SYS_ADMIN", "CapabilityBoundingSet=CAP_SYS_ADMIN CAP_NET_ADMIN", "CapabilityBoundingSet=CAP_SYS_ADMIN CAP_NET_ADMIN: only"),
    (DAEMON, "NoNewPrivileges=yes", "NoNewPrivileges=no", "NoNewPrivileges=yes is missing"),
    (DAEMON, "DeviceAllow=/dev/random rw", "DeviceAllow=/dev/random rw\nDeviceAllow=/dev/mem r", "DeviceAllow=/dev/mem r: only"),
    (DAEMON, "ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem=strict is missing"),
    (DAEMON, "MemoryDenyWriteExecute=yes", "PrivateUsers=yes\nMemoryDenyWriteExecute=yes", "PrivateUsers= puts the service"),
    (DAEMON, "Environment=ENTROPY_FEEDER_API_KEY_FILE=%d/api-key", "Environment=ENTROPY_FEEDER_API_KEY_FILE=%d/api-key ENTROPY_API_KEY=abc", "the API key in Environment="),
    (DAEMON, "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK", "only"),
    (BOOT, "SuccessExitStatus=75", "SuccessExitStatus=0", "SuccessExitStatus=75 is missing"),
    (BOOT, "WantedBy=multi-user.target", "RequiredBy=libvirt-guests.service", "RequiredBy= would let"),
    (BOOT, "After=network-online.target nss-lookup.target", "After=nss-lookup.target", "not ordered After=network-online.target"),
    (BOOT, "SystemCallFilter=~@privileged @resources @mount", "SystemCallFilter=~@privileged @resources", "SystemCallFilter=~@privileged @resources @mount is missing"),
    (CONFIG, 'gateway_endpoint = "https://', 'gateway_endpoint = "http://', "must be https://"),
    (CONFIG, 'egd_socket = "/run/entropy-feeder/egd.sock"', 'egd_socket = "/var/lib/egd.sock"', "is not in /run/entropy-feeder"),
    (CONFIG, "log_format =", 'api_key = "secret"\nlog_format =', "unknown keys ['api_key']"),
]


def self_test(d):
    import shutil
    import tempfile
    base = check(d)
    if base:
        sys.exit("self-test: the shipped files already fail:\n  " + "\n  ".join(base))
    for name, old, new, expected in MUTANTS:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp)
            for f in (DAEMON, BOOT, CONFIG):
                shutil.copy(d / f, copy / f)
            text = (copy / name).read_text()
            if old not in text:
                sys.exit(f"self-test: {name} has no {old!r} to plant a fault in")
            (copy / name).write_text(text.replace(old, new, 1))
            found = check(copy)
            if not any(expected in p for p in found):
                sys.exit(f"self-test: {name} with {new!r} not caught (wanted {expected!r}); got {found}")
            print(f"caught: {name} {new.splitlines()[-1]!r} -> {next(p for p in found if expected in p)}")


def main():
    args = sys.argv[1:]
    if args[:1] == ["--self-test"]:
        self_test(Path(args[1]) if len(args) > 1 else ROOT / "deploy/systemd")
        return
    d = Path(args[0]) if args else ROOT / "deploy/systemd"
    problems = check(d)
    if problems:
        print(f"{d}: {len(problems)} problems", file=sys.stderr)
        for p in problems:
            print("  -", p, file=sys.stderr)
        sys.exit(1)
    print(f"{d}: units hold CAP_SYS_ADMIN only and keep their hardening; boot unit fails open; config keys known, TLS, socket in the RuntimeDirectory")


if __name__ == "__main__":
    main()
