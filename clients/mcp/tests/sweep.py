#!/usr/bin/env python3
"""Hostile sweep of entropy-mcp's HTTP transport (security finding 9): under the default config
and a tight one, attackers vary the number of connections (below, at and past the cap),
half-open and slow-loris connections (request heads trickled at two rates, HTTP/2 preface only
with SETTINGS and PINGs), refused requests repeated to keep a connection alive, floods of
refused Origins and Hosts, bodies around the limit, and tokens (none, wrong, valid) with
sessions per token. Throughout, it checks that the process's RSS and open descriptors stay
under the bound entropy-mcp logs at start (its one implementation of the formula in
docs/security.md), that refusal log lines stay throttled (one per reason per second), that a
real client with a valid token is served or gets a documented refusal, and that descriptors
go back near the baseline once the attackers close.

    python sweep.py                 # default and tight configs (run by run.sh through e2e.py)
    python sweep.py --long          # also holds past-cap floods for longer
    python sweep.py --against BIN   # runs the same checks against another build (to see them fail)

Timeouts in the tight config are short so closures can be seen; a wait for one is bounded
(a hang guard), never a speed assertion.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import threading
import time
from pathlib import Path

from harness import RELEASE, Checks, Gateway, McpHttp, wait_for

TOKENS = {"alice": "emt_sweep_alice_" + "a" * 20, "bob": "emt_sweep_bob_" + "b" * 20,
          "carol": "emt_sweep_carol_" + "c" * 20}
TIGHT = {"connections": 24, "header_ms": 1000, "idle_ms": 2000, "sessions": 4, "per_token": 2,
         "requests": 4, "body": 65536}
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
H2_PING = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"pingpong"
# HEADERS (END_STREAM | END_HEADERS) on stream 1: GET /mcp, authority localhost, no token.
H2_REFUSED_GET_BLOCK = b"\x82\x86\x04\x04/mcp" + b"\x01\x09localhost"
H2_REFUSED_GET = (len(H2_REFUSED_GET_BLOCK).to_bytes(3, "big") + b"\x01\x05\x00\x00\x00\x01"
                  + H2_REFUSED_GET_BLOCK)


def proc_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def proc_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


class Monitor:
    """Samples the server's RSS and descriptors every 20 ms, keeping the highest."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.max_rss = 0
        self.max_fds = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.max_rss = max(self.max_rss, proc_rss(self.pid))
                self.max_fds = max(self.max_fds, proc_fds(self.pid))
            except OSError:
                return
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return None


def closed_by_server(sock: socket.socket, wait: float) -> bool:
    """True once the server has closed `sock` (EOF or reset), reading what it sends meanwhile;
    False if it is still open after `wait` seconds (a hang guard)."""
    sock.settimeout(min(0.2, max(wait, 0.01)))
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def h2_answered(received: bytes) -> bool:
    """True when `received` (from an HTTP/2 server) holds a HEADERS frame on stream 1."""
    at = 0
    while at + 9 <= len(received):
        length = int.from_bytes(received[at:at + 3], "big")
        kind, stream = received[at + 3], int.from_bytes(received[at + 5:at + 9], "big") & 0x7FFFFFFF
        if kind == 1 and stream == 1:
            return True
        at += 9 + length
    return False


def all_closed_by_server(socks: list[socket.socket], wait: float) -> int:
    """How many of `socks` the server has closed within `wait` seconds (a hang guard)."""
    deadline = time.monotonic() + wait
    open_ = list(socks)
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if not closed_by_server(s, 0.05)]
    return len(socks) - len(open_)


def request(port: int, method: str, body: bytes = b"", token: str | None = None,
            sock: socket.socket | None = None, **headers: str) -> tuple[int, dict, bytes]:
    """One HTTP/1.1 request (on `sock` if given, kept alive); (status, headers, body), or
    (0, {}, b"") when the connection was refused or closed."""
    own = sock is None
    sock = sock or connect(port)
    if sock is None:
        return 0, {}, b""
    head = {"Host": "localhost", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "Content-Length": str(len(body)),
            "MCP-Protocol-Version": "2025-06-18"}
    if token:
        head["Authorization"] = f"Bearer {token}"
    head.update({k.replace("_", "-"): v for k, v in headers.items()})
    raw = f"{method} /mcp HTTP/1.1\r\n".encode() + b"".join(
        f"{k}: ".encode() + (v.encode("latin-1") if isinstance(v, str) else v) + b"\r\n"
        for k, v in head.items()) + b"\r\n" + body
    try:
        sock.settimeout(30)
        try:
            sock.sendall(raw)
        except OSError:
            pass  # refused before the body was read: the answer may still be there
        reader = sock.makefile("rb")
        status_line = reader.readline()
        if not status_line:
            return 0, {}, b""
        status = int(status_line.split()[1])
        got: dict[str, str] = {}
        while (line := reader.readline().decode("latin-1").strip()):
            name, _, value = line.partition(":")
            got[name.lower()] = value.strip()
        if status in (204, 304):
            data = b""
        elif "content-length" in got:
            data = reader.read(int(got["content-length"]))
        else:  # chunked SSE: read chunks until the last one
            data = b""
            while (size := int(reader.readline().strip() or b"0", 16)):
                data += reader.read(size)
                reader.readline()
            reader.readline()
        return status, got, data
    except (OSError, ValueError, IndexError):
        return 0, {}, b""
    finally:
        if own:
            sock.close()


def rpc(method: str, params: dict | None = None, id_: int | None = 1) -> bytes:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id_ is not None:
        message["id"] = id_
    return json.dumps(message).encode()


INIT = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "sweep", "version": "0"}})


def open_session(port: int, token: str) -> tuple[int, str | None, str]:
    status, headers, body = request(port, "POST", INIT, token)
    session = headers.get("mcp-session-id")
    if status == 200 and session:
        request(port, "POST", rpc("notifications/initialized", id_=None), token,
                Mcp_Session_Id=session)
    return status, session, body.decode(errors="replace")


def close_session(port: int, token: str, session: str) -> int:
    return request(port, "DELETE", b"", token, Mcp_Session_Id=session)[0]


def real_client(port: int, token: str = TOKENS["alice"]) -> str:
    """A whole use: initialize, one tool call, close. "ok", or what refused it."""
    status, session, body = open_session(port, token)
    if status != 200 or not session:
        return f"initialize {status}"
    try:
        call = rpc("tools/call", {"name": "random_bytes", "arguments": {"count": 16}}, 2)
        status, _, body = request(port, "POST", call, token, Mcp_Session_Id=session)
        ok = status == 200 and b'"result"' in body and b'"isError":true' not in body
        return "ok" if ok else f"call {status} {body[:120]!r}"
    finally:
        close_session(port, token, session)


def documented(outcome: str) -> bool:
    """A documented refusal: the connection cap closes at accept (0), a cap answers 503."""
    return outcome == "ok" or outcome in ("initialize 0", "initialize 503")


class Sweep:
    def __init__(self, check: Checks, gateway: Gateway, key: str, tmp: Path, binary: Path,
                 long: bool) -> None:
        self.check, self.gateway, self.key, self.tmp = check, gateway, key, tmp
        self.binary, self.long = binary, long

    def start(self, name: str, limits: dict | None) -> tuple[McpHttp, int, dict]:
        args: list[str] = []
        if limits:
            args = ["--http-max-connections", str(limits["connections"]),
                    "--http-header-timeout-ms", str(limits["header_ms"]),
                    "--http-idle-timeout-ms", str(limits["idle_ms"]),
                    "--http-max-sessions", str(limits["sessions"]),
                    "--http-max-sessions-per-token", str(limits["per_token"]),
                    "--http-max-concurrent-requests", str(limits["requests"]),
                    "--http-max-body-bytes", str(limits["body"])]
        bound = self.bound(name, args, RELEASE / "entropy-mcp")
        if self.binary != RELEASE / "entropy-mcp":
            # Another build (an old one, to see the checks fail): the flags it lacks are
            # dropped, and the bound is this build's, for the same config.
            import subprocess
            known = subprocess.run([str(self.binary), "--help"], capture_output=True,
                                   text=True, timeout=30).stdout
            args = [a for i, a in enumerate(args) if not (
                (a.startswith("--") and a not in known)
                or (i and args[i - 1].startswith("--") and args[i - 1] not in known))]
        log = self.tmp / f"mcp-sweep-{name}.log"
        mcp = McpHttp(self.gateway, self.key, TOKENS, self.tmp, log, *args, binary=self.binary)
        port = int(mcp.url.rsplit(":", 1)[1].split("/")[0])
        return mcp, port, bound

    def bound(self, name: str, args: list[str], binary: Path) -> dict:
        """The bound `binary` logs at start for `args`."""
        log = self.tmp / f"mcp-sweep-{name}-bound.log"
        mcp = McpHttp(self.gateway, self.key, TOKENS, self.tmp, log, *args, binary=binary)
        try:
            wait_for(lambda: "bound_memory_bytes" in log.read_text(), "the bound's log line", 10)
        finally:
            mcp.stop()
        text = log.read_text()
        return {k: int(re.search(rf"{k}=(\d+)", text).group(1))
                for k in ("bound_memory_without_token_bytes", "bound_memory_bytes",
                          "bound_descriptors", "sessions_per_token")}

    def defaults(self) -> dict:
        """The default limits, as this build prints them (declared once, in its config)."""
        import subprocess
        import tomllib
        printed = subprocess.run([str(RELEASE / "entropy-mcp"), "--print-config"], capture_output=True,
                                 text=True, timeout=30, check=True).stdout
        c = tomllib.loads(printed)
        return {"connections": c["http_max_connections"], "header_ms": c["http_header_timeout_ms"],
                "idle_ms": c["http_idle_timeout_ms"], "sessions": c["http_max_sessions"],
                "requests": c["http_max_concurrent_requests"], "body": c["http_max_body_bytes"]}

    def run(self, name: str, limits: dict | None) -> None:
        """Every shape under `limits` (None: the defaults, timeouts too long to wait for)."""
        started = time.monotonic()
        mcp, port, bound = self.start(name, limits)
        pid = mcp.proc.pid
        tight = limits is not None
        limits = limits or {**self.defaults(), "per_token": bound["sessions_per_token"]}
        cap = limits["connections"]
        try:
            self.check(f"{name}: a real client is served at start", real_client(port) == "ok")
            baseline = proc_fds(pid)
            monitor = Monitor(pid)
            self.connections(name, port, cap, pid, limits if tight else None)
            if tight:
                self.slow_heads(name, port)
                self.refused_keepalive(name, port, limits)
            self.floods(name, port)
            self.bodies(name, port, limits["body"])
            self.sessions(name, port, limits, tight)
            monitor.close()
            self.check(f"{name}: RSS stayed under the written bound "
                       f"({monitor.max_rss >> 20} MiB of {bound['bound_memory_bytes'] >> 20} MiB)",
                       monitor.max_rss <= bound["bound_memory_bytes"], monitor.max_rss)
            self.check(f"{name}: open descriptors stayed under the written bound "
                       f"({monitor.max_fds} of {bound['bound_descriptors']})",
                       monitor.max_fds <= bound["bound_descriptors"], monitor.max_fds)
            try:
                wait_for(lambda: proc_fds(pid) <= baseline + 2, "descriptors back", 15)
            except RuntimeError:
                pass
            self.check(f"{name}: descriptors back near the baseline once the attackers closed",
                       proc_fds(pid) <= baseline + 2, f"{proc_fds(pid)} against {baseline}")
            self.check(f"{name}: a real client is served after the sweep", real_client(port) == "ok")
            self.throttled(name, mcp.log, time.monotonic() - started)
        finally:
            mcp.stop()

    def connections(self, name: str, port: int, cap: int, pid: int, limits: dict | None) -> None:
        """Half-open connections (nothing sent) below, at and past the cap."""
        for count in (cap // 2, cap, cap + 40):
            socks = [s for s in (connect(port) for _ in range(count)) if s]
            time.sleep(5 if self.long else 0.3)
            held = proc_fds(pid)
            outcome = real_client(port)
            if count < cap:
                self.check(f"{name}: {count} half-open connections (below the cap): served",
                           outcome == "ok", outcome)
            else:
                self.check(f"{name}: {count} half-open connections (cap {cap}): the real client is "
                           f"served or closed at accept", documented(outcome), outcome)
                self.check(f"{name}: {count} half-open connections hold at most the cap",
                           held <= cap + 16, f"{held} descriptors")
            if limits and count >= cap:  # tight: timeouts short enough to wait for
                wait = limits["header_ms"] / 1000 * 5 + 5
                closed = all_closed_by_server(socks, wait)
                self.check(f"{name}: half-open connections are closed by the header timeout",
                           closed == len(socks), f"{closed} of {len(socks)}")
                self.check(f"{name}: once they are closed, the real client is served",
                           real_client(port) == "ok")
            for s in socks:
                s.close()

    def slow_heads(self, name: str, port: int) -> None:
        """Request heads trickled byte by byte (two rates), HTTP/2 prefaces with only SETTINGS
        and PINGs, and HTTP/2 after one refused request: all closed, though bytes keep coming."""
        head = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"x" * 10_000
        shapes = {"HTTP/1.1 head at 10 bytes/s": (head, 0.1),
                  "HTTP/1.1 head at 2 bytes/s": (head, 0.5),
                  "HTTP/2 preface, then SETTINGS and PINGs": (H2_PREFACE + H2_SETTINGS, 0.3),
                  "HTTP/2 after a refused request, then PINGs": (
                      H2_PREFACE + H2_SETTINGS + H2_REFUSED_GET, 0.3)}
        results: dict[str, bool] = {}

        def attacker(label: str, first: bytes, every: float) -> None:
            """Sends `first` (HTTP/1.1: a byte of it) then a byte or a PING every `every` s;
            True when the server closes the connection (an HTTP/2 request must have been
            answered first, so a framing error cannot pass for a timeout)."""
            sock = connect(port)
            if sock is None:
                results[label] = False
                return
            h2 = first.startswith(H2_PREFACE)
            needs_answer = H2_REFUSED_GET in first
            received = b""
            try:
                sock.sendall(first if h2 else first[:1])
                position = 1
                deadline = time.monotonic() + 20
                sock.settimeout(every)
                while time.monotonic() < deadline:
                    try:
                        data = sock.recv(65536)
                        if data == b"":
                            break
                        received += data
                    except socket.timeout:
                        pass
                    sock.sendall(H2_PING if h2 else first[position:position + 1])
                    position += 1
                else:
                    results[label] = False
                    return
            except OSError:
                pass
            finally:
                sock.close()
            results[label] = not needs_answer or h2_answered(received)

        threads = [threading.Thread(target=attacker, args=(label, first, every))
                   for label, (first, every) in shapes.items() for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        self.check(f"{name}: served while slow heads trickle", real_client(port) == "ok")
        for t in threads:
            t.join()
        for label in shapes:
            self.check(f"{name}: {label}: closed by the server", results.get(label) is True)

    def refused_keepalive(self, name: str, port: int, limits: dict) -> None:
        """A connection that never presents a valid token, sending a refused request every
        200 ms, is closed by the idle timeout."""
        sock = connect(port)
        assert sock is not None
        deadline = time.monotonic() + limits["idle_ms"] / 1000 * 5 + 5
        statuses = []
        while time.monotonic() < deadline:
            status = request(port, "POST", INIT, "emt_wrong", sock=sock)[0]
            statuses.append(status)
            if status == 0:
                break
            time.sleep(0.2)
        sock.close()
        self.check(f"{name}: refused requests every 200 ms do not keep a connection (closed "
                   f"after {len(statuses) - 1} 401s)", statuses[-1] == 0 and set(statuses[:-1]) == {401},
                   statuses[-5:])

    def floods(self, name: str, port: int) -> None:
        """Refused Origins (one with U+202E), Hosts and tokens as fast as three keep-alive
        connections send them."""
        def flood(kind: str) -> None:
            sock = connect(port)
            until = time.monotonic() + 1.5  # past one throttle interval, so a count is held back
            i = 0
            while i < 300 or time.monotonic() < until:
                i += 1
                if kind == "origin":
                    status = request(port, "POST", INIT, TOKENS["bob"], sock=sock,
                                     Origin=b"https://evil.example/\xe2\x80\xae" + str(i).encode())
                elif kind == "host":
                    status = request(port, "POST", INIT, TOKENS["bob"], sock=sock,
                                     Host="rebound.example")
                else:
                    status = request(port, "POST", INIT, "emt_wrong", sock=sock)
                if status[0] == 0:
                    sock = connect(port)
            if sock:
                sock.close()

        threads = [threading.Thread(target=flood, args=(k,)) for k in ("origin", "host", "token")]
        for t in threads:
            t.start()
        outcome = real_client(port)
        for t in threads:
            t.join()
        self.check(f"{name}: served during floods of refused Origins, Hosts and tokens",
                   outcome == "ok", outcome)

    def bodies(self, name: str, port: int, limit: int) -> None:
        """Bodies at, just under and just over the limit, with and without a token."""
        def body(size: int) -> bytes:
            base = rpc("tools/list", {"pad": ""})
            return base.replace(b'"pad": ""', b'"pad": "' + b"x" * (size - len(base)) + b'"')
        status = request(port, "POST", body(limit), TOKENS["carol"])[0]
        self.check(f"{name}: a body of exactly http_max_body_bytes is read (not 413)",
                   status not in (0, 413), status)
        status = request(port, "POST", body(limit + 1), TOKENS["carol"])[0]
        self.check(f"{name}: a body one byte over is refused with 413", status == 413, status)
        status = request(port, "POST", body(limit * 4), None)[0]
        self.check(f"{name}: a large body without a token is refused with 401 (never read)",
                   status == 401, status)

    def sessions(self, name: str, port: int, limits: dict, tight: bool) -> None:
        """Tokens none, wrong, valid; one token up to its share and past it; others served."""
        share, cap = limits["per_token"], limits["sessions"]
        self.check(f"{name}: no token: 401", request(port, "POST", INIT)[0] == 401)
        self.check(f"{name}: wrong token: 401", request(port, "POST", INIT, "emt_x")[0] == 401)
        alice = [open_session(port, TOKENS["alice"]) for _ in range(share + 1)]
        statuses = [s for s, _, _ in alice]
        self.check(f"{name}: a token gets its share of {share} sessions, then 429 naming the limit",
                   statuses == [200] * share + [429] and "http_max_sessions_per_token" in alice[-1][2],
                   statuses)
        bob = open_session(port, TOKENS["bob"])
        self.check(f"{name}: another token still gets a session", bob[0] == 200, bob[0])
        first = alice[0][1] or ""
        ping = rpc("ping", {}, 7)
        other = request(port, "POST", ping, TOKENS["bob"], Mcp_Session_Id=first)[0]
        own = request(port, "POST", ping, TOKENS["alice"], Mcp_Session_Id=first)[0]
        self.check(f"{name}: a session is refused to another token (404) and served to its own",
                   (other, own) == (404, 200), (other, own))
        deleted = request(port, "DELETE", b"", TOKENS["bob"], Mcp_Session_Id=first)[0]
        self.check(f"{name}: another token cannot close it either", deleted == 404, deleted)
        opened = [s for _, s, _ in alice if s] + ([bob[1]] if bob[1] else [])
        if tight:
            # Fill the server: bob and carol up to the cap, then everyone gets 503.
            more = [open_session(port, TOKENS[t]) for t in ("bob", "carol") for _ in range(share)]
            opened += [s for st, s, _ in more if st == 200 and s]
            full = open_session(port, TOKENS["carol"])[0]
            self.check(f"{name}: past http_max_sessions ({cap}) every token gets 503",
                       len(opened) == cap and full in (429, 503), (len(opened), full))
        for session in opened:
            owner = "alice" if any(session == s for _, s, _ in alice) else None
            for token in ([owner] if owner else ["bob", "carol"]):
                if close_session(port, TOKENS[token], session) == 204:
                    break

    def throttled(self, name: str, log: Path, seconds: float) -> None:
        text = log.read_text()
        # Whatever their wording, refusal lines of all reasons together stay throttled.
        refusals = len(re.findall(r"(?im)^.*(refus|reject|limit reached|reached; closing).*$", text))
        self.check(f"{name}: refusal lines in all ({refusals} in {seconds:.0f} s) stay under "
                   f"one a second per reason", refusals <= 9 * (seconds + 2), refusals)
        for reason in ("connections", "origin", "host", "token", "body_too_large", "token_share"):
            lines = len(re.findall(rf'reason="?{reason}"?[ ,]', text))
            self.check(f"{name}: refusal lines for {reason} throttled ({lines} in {seconds:.0f} s)",
                       0 < lines <= seconds + 2, lines)
        self.check(f"{name}: a held-back count is logged", re.search(r"held_back=[1-9]", text) is not None)
        self.check(f"{name}: U+202E in an Origin is logged escaped",
                   "\\u{202e}" in text and "\u202e" not in text)


def descriptor_limit(check: Checks, gateway: Gateway, key: str, tmp: Path, binary: Path) -> None:
    """Under a descriptor limit too low for http_max_connections, the server does not start."""
    import shutil
    import subprocess
    if not shutil.which("prlimit"):
        print("SKIP descriptor limit check: prlimit is not installed")
        return
    tokens = tmp / "limit-tokens.toml"
    tokens.write_text('[[token]]\nname = "t"\nsha256 = "' + "0" * 64 + '"\n')
    proc = subprocess.Popen(["prlimit", "--nofile=128:128", str(binary), "--transport", "http",
                             "--http-listen-addr", "127.0.0.1:0", "--http-tokens-file", str(tokens),
                             "--gateway-endpoint", gateway.endpoint],
                            env={"ENTROPY_API_KEY": key, "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # it started serving
        proc.kill()
        _, err = proc.communicate()
    check("sweep: http_max_connections past the descriptor limit: exit 64 naming the key",
          proc.returncode == 64 and "http_max_connections" in err, (proc.returncode, err[-300:]))


def run(check: Checks, gateway: Gateway, key: str, tmp: Path, binary: Path = RELEASE / "entropy-mcp",
        long: bool = False) -> None:
    sweep = Sweep(check, gateway, key, tmp, binary, long)
    started = time.monotonic()
    descriptor_limit(check, gateway, key, tmp, binary)
    sweep.run("sweep default", None)
    sweep.run("sweep tight", TIGHT)
    print(f"sweep took {time.monotonic() - started:.0f} s", flush=True)


def main() -> int:
    import os
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true")
    parser.add_argument("--against", type=Path, default=RELEASE / "entropy-mcp")
    options = parser.parse_args()
    check = Checks()
    tmp = Path(tempfile.mkdtemp(prefix="entropy-mcp-sweep-"))
    key = "mcp-sweep-" + os.urandom(8).hex()
    gateway = Gateway.dev(key, tmp / "gateway.log")
    try:
        run(check, gateway, key, tmp, options.against, options.long)
    finally:
        gateway.stop()
    print(f"logs in {tmp}")
    print(check.summary())
    return 1 if check.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
