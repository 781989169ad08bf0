#!/usr/bin/env python3
"""The measurements behind the constants of entropy-mcp's worst case (src/bounds.rs and
docs/security.md, "Resource bounds"): RSS per idle connection (plain, after a refused request,
over TLS), per open session, and per request in progress with the worst body shape, read from
/proc/PID/status of a release build. Not a test: run it after a change that could move them.

    python measure.py [--binary target/release/entropy-mcp]
"""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from harness import RELEASE, Gateway, McpHttp
from sweep import TOKENS, Monitor, close_session, open_session, proc_rss, real_client, request


def measure(gateway: Gateway, key: str, tmp: Path, binary: Path) -> None:
    """RSS per idle connection (plain, after a refused request, over TLS), per open session, and
    per request in progress with the worst body shape, on a release build."""
    certs = tmp / "certs"
    subprocess.run([str(RELEASE / "entropy-gateway"), "dev-certs", "--out", str(certs)],
                   check=True, capture_output=True, timeout=60)
    wide = ["--http-max-connections", "2000", "--http-max-sessions", "1000",
            "--http-max-sessions-per-token", "1000", "--http-max-concurrent-requests", "16"]

    def settle(pid: int) -> int:
        time.sleep(1.0)
        return proc_rss(pid)

    for tls in (False, True):
        extra = ["--http-tls-cert-file", str(certs / "gateway.pem"),
                 "--http-tls-key-file", str(certs / "gateway.key")] if tls else []
        mcp = McpHttp(gateway, key, TOKENS, tmp, tmp / f"measure-{tls}.log", *wide, *extra,
                      binary=binary)
        port = int(mcp.url.rsplit(":", 1)[1].split("/")[0])
        pid = mcp.proc.pid
        try:
            if not tls:
                real_client(port)
            base = settle(pid)
            print(f"tls={tls}: base RSS {base / 2**20:.1f} MiB")
            n = 500
            if tls:
                context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
                context.set_alpn_protocols(["http/1.1"])
                socks = [context.wrap_socket(socket.create_connection(("127.0.0.1", port)),
                                             server_hostname="localhost") for _ in range(n)]
            else:
                socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
            rss = settle(pid)
            print(f"tls={tls}: {n} idle connections: {(rss - base) / n / 1024:.1f} KiB each")
            if not tls:
                for sock in socks:
                    sock.sendall(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
                after = settle(pid)
                print(f"tls={tls}: after a refused request each: {(after - base) / n / 1024:.1f} KiB each")
            for sock in socks:
                sock.close()
            if tls:
                continue
            base = settle(pid)
            sessions = [open_session(port, TOKENS["alice"])[1] for _ in range(300)]
            rss = settle(pid)
            print(f"300 open sessions: {(rss - base) / 300 / 1024:.1f} KiB each")
            for session in sessions:
                if session:
                    close_session(port, TOKENS["alice"], session)
            body_limit = 1 << 20
            mcp.stop()
            mcp = McpHttp(gateway, key, TOKENS, tmp, tmp / "measure-body.log", *wide,
                          "--http-max-body-bytes", str(body_limit), binary=binary)
            port = int(mcp.url.rsplit(":", 1)[1].split("/")[0])
            pid = mcp.proc.pid
            session = open_session(port, TOKENS["alice"])[1] or ""
            base = settle(pid)
            monitor = Monitor(pid)
            prefix = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shuffle","arguments":{"items":['
            items = b",".join([b"[]"] * ((body_limit - len(prefix) - 8) // 3))
            body = prefix + items + b"]}}}"
            threads = [threading.Thread(target=request, args=(
                port, "POST", body.replace(b'"id":3', b'"id":%d' % (100 + i)), TOKENS["alice"]),
                kwargs={"Mcp_Session_Id": session}) for i in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            monitor.close()
            print(f"16 requests of a {len(body)}-byte body of empty arrays: peak "
                  f"{(monitor.max_rss - base) / 16 / len(body):.1f} bytes per body byte")
        finally:
            mcp.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, default=RELEASE / "entropy-mcp")
    options = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="entropy-mcp-measure-"))
    key = "mcp-measure-" + os.urandom(8).hex()
    gateway = Gateway.dev(key, tmp / "gateway.log")
    try:
        measure(gateway, key, tmp, options.binary)
    finally:
        gateway.stop()


if __name__ == "__main__":
    main()
