#!/usr/bin/env python3
"""Policy of the gateway's and the collector's systemd units and example configs
(deploy/systemd/), what `systemd-analyze verify` cannot say: each unit keeps its hardening
lines, holds no capability at all, runs as its own user, takes every secret as a credential
(the TLS private keys, the chunk MAC keys; never in Environment=), writes only its
StateDirectory, does not start without its config; each example config names only the keys
its program knows (those of server/gateway.example.toml and collector/collector.example.toml,
which list every key), serves TLS, keeps metrics on loopback and names no secret itself.
The feeder's units have their own policy (systemd_policy.py): CAP_SYS_ADMIN, the EGD socket.

Usage: scripts/deploy/systemd_services_policy.py [DIR]     (default deploy/systemd)
       scripts/deploy/systemd_services_policy.py --self-test
--self-test plants one fault at a time in a copy of the files and requires each to be named.
Exits 1 with every problem listed.
"""
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from systemd_policy import parse_unit, values  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GATEWAY, COLLECTOR = "entropy-gateway.service", "entropy-collector.service"
GATEWAY_CONFIG, COLLECTOR_CONFIG = "gateway.toml", "collector.toml"
FILES = (GATEWAY, COLLECTOR, GATEWAY_CONFIG, COLLECTOR_CONFIG)

# Lines both units hold exactly: the confinement.
COMMON = [
    ("Service", "CapabilityBoundingSet", ""),
    ("Service", "AmbientCapabilities", ""),
    ("Service", "NoNewPrivileges", "yes"),
    ("Service", "ProtectSystem", "strict"),
    ("Service", "ProtectHome", "yes"),
    ("Service", "PrivateTmp", "yes"),
    ("Service", "PrivateDevices", "yes"),
    ("Service", "DevicePolicy", "closed"),
    ("Service", "PrivateUsers", "yes"),
    ("Service", "RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
    ("Service", "SystemCallFilter", "@system-service"),
    ("Service", "SystemCallFilter", "~@privileged @resources"),
    ("Service", "SystemCallArchitectures", "native"),
    ("Service", "MemoryDenyWriteExecute", "yes"),
    ("Service", "LockPersonality", "yes"),
    ("Service", "RestrictNamespaces", "yes"),
    ("Service", "RestrictSUIDSGID", "yes"),
    ("Service", "RestrictRealtime", "yes"),
    ("Service", "ProtectKernelTunables", "yes"),
    ("Service", "ProtectKernelModules", "yes"),
    ("Service", "ProtectKernelLogs", "yes"),
    ("Service", "ProtectControlGroups", "yes"),
    ("Service", "ProtectClock", "yes"),
    ("Service", "RestartPreventExitStatus", "64"),
    ("Unit", "Wants", "network-online.target"),
]
# Keys whose every value is held to one list (no capability, no further address family).
ONLY = {
    "CapabilityBoundingSet": {""},
    "AmbientCapabilities": {""},
    "RestrictAddressFamilies": {"AF_INET AF_INET6 AF_UNIX"},
    "SystemCallFilter": {"@system-service", "~@privileged @resources"},
    "DeviceAllow": set(),
    "ReadWritePaths": set(),
}

# Per unit: user, config path, the credentials it must load (id -> source), the variables that
# point config keys at them.
UNITS = {
    GATEWAY: {
        "user": "entropy-gateway",
        "config": "/etc/entropy-gateway/gateway.toml",
        "credentials": {
            "tls-key.pem": "/etc/entropy-gateway/tls/gateway-key.pem",
            "ingest-tls-key.pem": "/etc/entropy-gateway/tls/ingest-key.pem",
        },
        "env": {
            "ENTROPY_TLS_KEY_FILE": "%d/tls-key.pem",
            "ENTROPY_INGEST_TLS_KEY_FILE": "%d/ingest-tls-key.pem",
            "ENTROPY_INGEST_KEYS_DIR": "%d",
        },
    },
    COLLECTOR: {
        "user": "entropy-collector",
        "config": "/etc/entropy-collector/collector.toml",
        "credentials": {
            "mac.key": "/etc/entropy-collector/mac.key",
            "client-key.pem": "/etc/entropy-collector/tls/collector-key.pem",
        },
        "env": {"ENTROPY_KEY_FILE": "%d/mac.key"},
    },
}


def credentials(lines):
    """{id: path} of the unit's LoadCredential= lines."""
    out = {}
    for v in values(lines, "Service", "LoadCredential"):
        cid, _, path = v.partition(":")
        out[cid] = path
    return out


def environment(lines):
    """{name: value} of the unit's Environment= lines (several assignments per line allowed)."""
    out = {}
    for v in values(lines, "Service", "Environment"):
        for item in v.split():
            name, _, value = item.strip('"').partition("=")
            out[name] = value
    return out


def check_unit(name, lines, problems):
    spec = UNITS[name]

    def fail(msg):
        problems.append(f"{name}: {msg}")

    wanted = COMMON + [("Service", "User", spec["user"]), ("Service", "Group", spec["user"])]
    for section, key, want in wanted:
        if want not in values(lines, section, key):
            fail(f"[{section}] {key}={want} is missing")
    for key, allowed in ONLY.items():
        for v in values(lines, "Service", key):
            if v not in allowed:
                fail(f"{key}={v}: only {sorted(allowed) or 'none'} allowed")
    for key in ("PermissionsStartOnly", "DynamicUser"):
        if values(lines, "Service", key):
            fail(f"{key}= is not how this unit runs (its own sysusers.d user, confined commands)")
    if "network-online.target" not in " ".join(values(lines, "Unit", "After")):
        fail("not ordered After=network-online.target")
    if f"{spec['config']}" not in values(lines, "Unit", "ConditionPathExists"):
        fail(f"no ConditionPathExists={spec['config']}: an unconfigured install would restart in a loop")
    execs = values(lines, "Service", "ExecStart")
    program = spec["user"]
    if execs != [f"/usr/local/bin/{program} --config {spec['config']}"]:
        fail(f"ExecStart {execs} is not /usr/local/bin/{program} --config {spec['config']}")
    for key in ("ExecStartPre", "ExecStartPost", "ExecStop", "ExecReload"):
        for v in values(lines, "Service", key):
            if v.startswith(("+", "!")):
                fail(f"{key}={v} runs with full privileges")

    creds = credentials(lines)
    for cid, path in spec["credentials"].items():
        if creds.get(cid) != path:
            fail(f"LoadCredential={cid}:{path} is missing (secrets reach the service as credentials)")
    for cid, path in creds.items():
        if not path.startswith("/etc/"):
            fail(f"LoadCredential={cid}:{path}: credentials come from root-owned files under /etc")
    env = environment(lines)
    for var, want in spec["env"].items():
        if env.get(var) != want:
            fail(f"Environment={var}={want} is missing (the config key pointed at the credential)")
    for var, value in env.items():
        # Only paths may be passed: a variable named like a secret holding anything but a
        # path into the credentials directory is a secret in `systemctl show`.
        if re.search(r"(KEY|SECRET|TOKEN|PASSWORD)$", var) or (
                re.search(r"_(FILE|DIR)$", var) and re.search(r"KEY", var) and not value.startswith("%d")):
            fail(f"Environment={var}=...: a secret (or a path to one outside the credentials) in Environment=; use LoadCredential=")
    return creds


def check_gateway(lines, creds, problems):
    mac = [cid for cid in creds if cid.endswith(".key")]
    if not mac:
        problems.append(f"{GATEWAY}: no <key_id>.key credential: ingest_keys_dir (the credentials directory) would be empty")
    for cid in mac:
        if not creds[cid].startswith("/etc/entropy-gateway/ingest-keys/"):
            problems.append(f"{GATEWAY}: {cid} is read as a chunk MAC key (ingest_keys_dir reads every *.key); only MAC keys may end in .key")
    if values(lines, "Service", "StateDirectory") != ["entropy-gateway"]:
        problems.append(f"{GATEWAY}: StateDirectory=entropy-gateway is missing (state_dir, the ingest lease; ProtectSystem=strict leaves nothing else writable)")
    if values(lines, "Service", "StateDirectoryMode") != ["0700"]:
        problems.append(f"{GATEWAY}: StateDirectoryMode must be 0700")


def known_keys(example):
    """Every key of an example config (the examples list every key, commented or not)."""
    keys = set()
    for raw in (ROOT / example).read_text().splitlines():
        m = re.match(r"^#?\s*([a-z][a-z0-9_]*)\s*=", raw)
        if m:
            keys.add(m.group(1))
    return keys


def loopback(addr):
    return not addr or addr.startswith(("127.", "[::1]", "localhost:"))


def check_gateway_config(cfg, problems):
    def fail(msg):
        problems.append(f"{GATEWAY_CONFIG}: {msg}")

    unknown = sorted(set(cfg) - known_keys("server/gateway.example.toml"))
    if unknown:
        fail(f"unknown keys {unknown}")
    for k in ("tls_key_file", "ingest_tls_key_file", "ingest_keys_dir"):
        if k in cfg:
            fail(f"{k} is set: the unit points it at its credentials")
    for k in ("tls_cert_file", "ingest_tls_cert_file", "ingest_client_ca_file"):
        if not cfg.get(k):
            fail(f"{k} is not set: TLS on the public listener and mTLS on ingest")
    if cfg.get("state_dir") != "/var/lib/entropy-gateway":
        fail(f"state_dir {cfg.get('state_dir')} is not the unit's StateDirectory /var/lib/entropy-gateway")
    if not str(cfg.get("api_keys_file", "")).startswith("/etc/entropy-gateway/"):
        fail("api_keys_file is not under /etc/entropy-gateway")
    if not loopback(cfg.get("metrics_listen_addr", "127.0.0.1:9464")):
        fail(f"metrics_listen_addr {cfg.get('metrics_listen_addr')} is not loopback")
    if str(cfg.get("ingest_listen_addr", "127.0.0.1:50052")).startswith(("0.0.0.0", "[::]")):
        fail("ingest_listen_addr on every address: ingest belongs on loopback or the internal network only")


def check_collector_config(cfg, problems):
    def fail(msg):
        problems.append(f"{COLLECTOR_CONFIG}: {msg}")

    known = known_keys("collector/collector.example.toml")
    unknown = sorted(set(cfg) - known - {"gateway", "source"})
    for table in ("gateway", "source"):
        for t in cfg.get(table, []):
            unknown += sorted(f"{table}.{k}" for k in set(t) - known)
    if unknown:
        fail(f"unknown keys {unknown}")
    if "key_file" in cfg:
        fail("key_file is set: the unit points it at its credential")
    if not loopback(cfg.get("metrics_listen_addr", "0.0.0.0:9464")):
        fail(f"metrics_listen_addr {cfg.get('metrics_listen_addr')} is not loopback")
    gateways = cfg.get("gateway", [])
    if not gateways:
        fail("no [[gateway]]")
    for g in gateways:
        if not str(g.get("endpoint", "")).startswith("https://"):
            fail(f"gateway {g.get('id')}: endpoint must be https:// (mTLS on ingest)")
        if g.get("client_key_file") != "/run/credentials/entropy-collector.service/client-key.pem":
            fail(f"gateway {g.get('id')}: client_key_file is not the unit's credential /run/credentials/entropy-collector.service/client-key.pem")
    for s in cfg.get("source", []):
        if s.get("allow_http"):
            fail(f"source {s.get('name')}: allow_http (plaintext to the appliance is for the simulator)")


def check(d):
    problems = []
    units = {}
    for name in (GATEWAY, COLLECTOR):
        try:
            units[name] = parse_unit((d / name).read_text())
        except (OSError, ValueError) as e:
            problems.append(f"{name}: {e}")
    for name, lines in units.items():
        creds = check_unit(name, lines, problems)
        if name == GATEWAY:
            check_gateway(lines, creds, problems)
    for name, checker in ((GATEWAY_CONFIG, check_gateway_config), (COLLECTOR_CONFIG, check_collector_config)):
        try:
            cfg = tomllib.loads((d / name).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            problems.append(f"{name}: {e}")
            continue
        checker(cfg, problems)
    return problems


# Planted faults: (file, old, new, expected problem). Each must be found on its own.
MUTANTS = [
    (GATEWAY, "CapabilityBoundingSet=\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n", "CapabilityBoundingSet=CAP_NET_BIND_SERVICE: only"),
    (GATEWAY, "NoNewPrivileges=yes", "NoNewPrivileges=no", "NoNewPrivileges=yes is missing"),
    (GATEWAY, "ProtectSystem=strict", "ProtectSystem=full", "ProtectSystem=strict is missing"),
    (GATEWAY, "Environment=ENTROPY_TLS_KEY_FILE=%d/tls-key.pem", "Environment=ENTROPY_TLS_KEY_FILE=/etc/entropy-gateway/tls/gateway-key.pem", "ENTROPY_TLS_KEY_FILE=%d/tls-key.pem is missing"),
    (GATEWAY, "LoadCredential=tls-key.pem:", "LoadCredential=tls.key:", "only MAC keys may end in .key"),
    (GATEWAY, "StateDirectory=entropy-gateway", "ReadWritePaths=/var/lib/entropy-gateway", "ReadWritePaths=/var/lib/entropy-gateway: only"),
    (GATEWAY, "ConditionPathExists=/etc/entropy-gateway/gateway.toml", "", "no ConditionPathExists"),
    (GATEWAY, "SystemCallFilter=~@privileged @resources", "SystemCallFilter=~@resources", "SystemCallFilter=~@privileged @resources is missing"),
    (COLLECTOR, "PrivateDevices=yes", "PrivateDevices=no", "PrivateDevices=yes is missing"),
    (COLLECTOR, "Environment=ENTROPY_KEY_FILE=%d/mac.key", "Environment=ENTROPY_KEY_FILE=%d/mac.key ENTROPY_API_KEY=abc", "a secret (or a path to one"),
    (COLLECTOR, "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK", "only"),
    (COLLECTOR, "User=entropy-collector", "User=root", "User=entropy-collector is missing"),
    (GATEWAY_CONFIG, 'log_format = "text"', 'tls_key_file = "/etc/entropy-gateway/tls/gateway-key.pem"\nlog_format = "text"', "tls_key_file is set"),
    (GATEWAY_CONFIG, 'metrics_listen_addr = "127.0.0.1:9464"', 'metrics_listen_addr = "0.0.0.0:9464"', "is not loopback"),
    (GATEWAY_CONFIG, 'ingest_listen_addr = "127.0.0.1:50052"', 'ingest_listen_addr = "0.0.0.0:50052"', "ingest_listen_addr on every address"),
    (GATEWAY_CONFIG, "log_format =", 'api_key = "secret"\nlog_format =', "unknown keys ['api_key']"),
    (COLLECTOR_CONFIG, 'endpoint = "https://', 'endpoint = "http://', "endpoint must be https://"),
    (COLLECTOR_CONFIG, 'client_key_file = "/run/credentials/entropy-collector.service/client-key.pem"', 'client_key_file = "/etc/entropy-collector/tls/collector-key.pem"', "client_key_file is not the unit's credential"),
    (COLLECTOR_CONFIG, 'min_sources = 1', 'min_sources = 1\nkey_file = "/etc/entropy-collector/mac.key"', "key_file is set"),
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
            for f in FILES:
                shutil.copy(d / f, copy / f)
            text = (copy / name).read_text()
            if old not in text:
                sys.exit(f"self-test: {name} has no {old!r} to plant a fault in")
            (copy / name).write_text(text.replace(old, new, 1))
            found = check(copy)
            if not any(expected in p for p in found):
                sys.exit(f"self-test: {name} with {new!r} not caught (wanted {expected!r}); got {found}")
            shown = new.splitlines()[-1] if new else f"without {old.strip()}"
            print(f"caught: {name} {shown!r} -> {next(p for p in found if expected in p)}")


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
    print(f"{d}: gateway and collector units hold no capability, keep their hardening and take their secrets as credentials; configs' keys known, TLS, metrics on loopback")


if __name__ == "__main__":
    main()
