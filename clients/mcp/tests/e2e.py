#!/usr/bin/env python3
"""End-to-end test of entropy-mcp with the official MCP Python SDK (`mcp` on PyPI) against
real gateways: a `--dev` gateway (fed by its in-process collector) and key-file gateways with
an empty pool (for slow calls, refusals and quotas). Run by run.sh, which builds the binaries
and installs the SDK and the MCP Inspector.

Over stdio and Streamable HTTP: initialize, list tools, every tool with good and bad arguments,
the status resource; HTTP refusals (no token, wrong token, wrong Origin, wrong Host, oversized
body, session cap) and TLS; the hostile sweep of the HTTP transport's bounds (sweep.py); a call
while the gateway is stopped and after it restarts; cancellation of a slow call (the gateway
sees its waiter leave); quota, no-entropy, bad-key and missing-scope refusals; bytes drawn
through MCP counted under the MCP server's key; no bytes shared between MCP and direct callers;
the Inspector's --cli listing the tools.

Prints one line per check and `mcp: N passed, M failed`; exits 1 on any failure.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import cases
import sweep
from harness import RELEASE, Checks, Gateway, McpHttp, clean_env, log_tail, repeated_runs, text_of

MCP_BIN = str(RELEASE / "entropy-mcp")
DEV_KEY = "mcp-e2e-" + os.urandom(8).hex()
TOKEN = "emt_" + os.urandom(16).hex()
check = Checks()


def stdio(gateway: Gateway, key: str, log: Path, *args: str, mode: str = "legacy") -> Client:
    params = StdioServerParameters(
        command=MCP_BIN,
        args=["--gateway-endpoint", gateway.endpoint, *args],
        env=clean_env(ENTROPY_API_KEY=key),
    )
    return Client(stdio_client(params, errlog=open(log, "a")), mode=mode)


def http(url: str, token: str | None = TOKEN, mode: str = "legacy", verify: object = True,
         statuses: list[int] | None = None, **headers: str) -> Client:
    """An SDK client over Streamable HTTP; the HTTP status of every response it gets is
    appended to `statuses` (the SDK reports a refused request only as a JSON-RPC error)."""
    if token:
        headers["Authorization"] = f"Bearer {token}"

    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    client = httpx2.AsyncClient(headers=headers, verify=verify, timeout=httpx2.Timeout(30, read=300),
                                event_hooks={"response": [record]})
    return Client(streamable_http_client(url, http_client=client), mode=mode)


async def raw_post(url: str, body: bytes, **headers: str) -> httpx2.Response:
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as c:
        return await c.post(url, content=body, headers={**base, **headers})


def describe(e: BaseException) -> str:
    """An exception and everything grouped or chained under it, as one string."""
    parts = [repr(e)]
    for inner in getattr(e, "exceptions", ()):
        parts.append(describe(inner))
    if e.__cause__ is not None:
        parts.append(describe(e.__cause__))
    return " | ".join(parts)


async def status(client: Client) -> dict:
    result = await client.call_tool("gateway_status", {})
    if result.is_error:
        raise RuntimeError(text_of(result))
    return result.structured_content


async def outage_and_recovery(gateway: Gateway, clients: dict[str, Client], mcp: McpHttp) -> None:
    """Stop the gateway: calls fail as tool errors saying to retry, nothing crashes; start it
    again: the next call works."""
    gateway.stop()
    for name, client in clients.items():
        r = await client.call_tool("random_bytes", {"count": 16})
        check(f"{name}: with the gateway stopped, a call is a tool error saying to try again",
              r.is_error and r.structured_content.get("error") == "unavailable" and "try again" in text_of(r),
              text_of(r))
    check("the HTTP MCP server is still running while the gateway is down", mcp.alive(), log_tail(mcp.log))
    gateway.start()
    for name, client in clients.items():
        r = await client.call_tool("random_bytes", {"count": 16})
        check(f"{name}: the first call after the gateway is back works",
              not r.is_error and len(r.structured_content["data"]) == 32, text_of(r))


async def counters_and_no_sharing(gateway: Gateway, clients: dict[str, Client]) -> None:
    """Bytes drawn through MCP appear in the gateway's served counter for the MCP server's key
    (dev mode has one key, `dev`; nothing else draws in this window); then MCP and direct
    callers draw at once and no 16-byte run appears twice anywhere."""
    before = gateway.served_to_key("dev")
    drawn = 0
    for client in clients.values():
        for n in (1, 100, 4096):
            r = await client.call_tool("random_bytes", {"count": n, "encoding": "base64"})
            drawn += r.structured_content["bytes"]
        r = await client.call_tool("shuffle", {"items": list(range(300))})
        drawn += r.structured_content["entropy_bytes_drawn"]
        r = await client.call_tool("generate_password", {"length": 64})
        drawn += r.structured_content["entropy_bytes_drawn"]
    after = gateway.served_to_key("dev")
    check("bytes drawn through MCP show up exactly in the gateway's served counter for its key",
          after - before == drawn, f"counter moved {after - before}, MCP drew {drawn}")

    buffers: list[bytes] = []

    async def via_mcp(client: Client) -> None:
        for _ in range(12):
            r = await client.call_tool("random_bytes", {"count": 4096})
            buffers.append(bytes.fromhex(r.structured_content["data"]))

    def direct() -> None:
        env = clean_env(ENTROPY_ENDPOINT=gateway.endpoint, ENTROPY_API_KEY=DEV_KEY)
        for _ in range(12):
            out = subprocess.run([str(RELEASE / "entropy"), "bytes", "4096", "--hex"],
                                 env=env, capture_output=True, text=True, timeout=60)
            buffers.append(bytes.fromhex(out.stdout.strip()))

    async with anyio.create_task_group() as tg:
        for client in clients.values():
            tg.start_soon(via_mcp, client)
        tg.start_soon(anyio.to_thread.run_sync, direct)
    total = sum(map(len, buffers))
    check(f"no bytes served twice between MCP (stdio, HTTP) and direct callers ({total} bytes)",
          len(buffers) == 36 and repeated_runs(buffers) == 0, f"{len(buffers)} buffers")


async def http_refusals(gateway: Gateway, tmp: Path, log: Path) -> None:
    """The HTTP gate: token, Origin, Host, body size, session cap; Origins that are allowed."""
    mcp = McpHttp(gateway, DEV_KEY, {"e2e": TOKEN}, tmp, log,
                  "--http-allowed-origins", "https://agent.example", "--http-max-sessions", "2",
                  # One token may take both sessions here; the per-token share is swept in sweep.py.
                  "--http-max-sessions-per-token", "2", "--http-max-body-bytes", "65536")
    try:
        init = cases.initialize_body()
        r = await raw_post(mcp.url, init)
        check("HTTP without a token: 401 with WWW-Authenticate",
              r.status_code == 401 and "Bearer" in r.headers.get("www-authenticate", ""), r.status_code)
        r = await raw_post(mcp.url, init, Authorization="Bearer emt_wrong")
        check("HTTP with a wrong token: 401", r.status_code == 401, r.status_code)
        seen: list[int] = []
        try:
            async with http(mcp.url, token=None, statuses=seen) as c:
                await c.list_tools()
            check("the MCP client without a token is refused", False, "connected")
        except Exception as e:  # noqa: BLE001 - the SDK wraps the HTTP error in exception groups
            check("the MCP client without a token is refused (its requests got 401)",
                  bool(seen) and set(seen) == {401}, f"statuses {seen}: {describe(e)}")
        r = await raw_post(mcp.url, init, Authorization=f"Bearer {TOKEN}", Origin="https://evil.example")
        check("HTTP with a valid token but a wrong Origin: 403", r.status_code == 403, r.status_code)
        seen = []
        try:
            async with http(mcp.url, statuses=seen, Origin="http://attacker.localhost:8080") as c:
                await c.list_tools()
            check("the MCP client sending a wrong Origin is refused", False, "connected")
        except Exception as e:  # noqa: BLE001
            check("the MCP client sending a wrong Origin is refused (its requests got 403)",
                  bool(seen) and set(seen) == {403}, f"statuses {seen}: {describe(e)}")
        r = await raw_post(mcp.url, init, Authorization=f"Bearer {TOKEN}", Host="rebound.example")
        check("HTTP with a Host not in http_allowed_hosts (DNS rebinding): 403", r.status_code == 403, r.status_code)
        r = await raw_post(mcp.url, b'{"pad": "' + b"x" * 70_000 + b'"}', Authorization=f"Bearer {TOKEN}")
        check("HTTP body over http_max_body_bytes: 413", r.status_code == 413, r.status_code)
        async with http(mcp.url, Origin="https://agent.example") as c:
            tools = await c.list_tools()
            check("an allowed Origin with a valid token works", len(tools.tools) == len(cases.TOOLS))
            async with http(mcp.url) as c2:
                await c2.list_tools()
                r = await raw_post(mcp.url, init, Authorization=f"Bearer {TOKEN}")
                check("a third session past http_max_sessions = 2: 503 with Retry-After",
                      r.status_code == 503 and r.headers.get("retry-after") == "1", f"{r.status_code} {r.text}")
        check("the token never reaches the HTTP server's log, its name may",
              TOKEN not in log.read_text() and "http_allowed_origins" in log.read_text(), log_tail(log))
    finally:
        mcp.stop()


async def tls(gateway: Gateway, tmp: Path, log: Path) -> None:
    certs = tmp / "certs"
    subprocess.run([str(RELEASE / "entropy-gateway"), "dev-certs", "--out", str(certs)],
                   check=True, capture_output=True, timeout=60)
    mcp = McpHttp(gateway, DEV_KEY, {"e2e": TOKEN}, tmp, log,
                  "--http-tls-cert-file", str(certs / "gateway.pem"),
                  "--http-tls-key-file", str(certs / "gateway.key"))
    try:
        context = ssl.create_default_context(cafile=str(certs / "ca.pem"))
        async with http(mcp.url, verify=context) as c:
            r = await c.call_tool("roll_dice", {"notation": "2d6"})
            check("HTTPS (rustls): a call works over TLS", mcp.url.startswith("https://") and not r.is_error,
                  text_of(r))
    finally:
        mcp.stop()


async def slow_call_cancelled(client: Client, name: str) -> None:
    """A draw from an empty pool waits at the gateway; cancelling it in the MCP client must end
    the gateway call too (its waiter leaves long before the gateway's 10-minute wait)."""
    scope = anyio.CancelScope()

    async def slow() -> None:
        with scope:
            await client.call_tool("random_bytes", {"count": 64})

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        waiting = 0
        for _ in range(400):
            waiting = (await status(client))["waiters"]
            if waiting == 1:
                break
            await anyio.sleep(0.05)
        check(f"{name}: the slow call is waiting at the gateway", waiting == 1, waiting)
        scope.cancel()
    for _ in range(400):
        waiting = (await status(client))["waiters"]
        if waiting == 0:
            break
        await anyio.sleep(0.05)
    check(f"{name}: cancelling it in the client ends the gateway call (no waiter left)", waiting == 0, waiting)


async def refusals(tmp: Path, logs: Path) -> None:
    """Gateways with an empty pool: cancellation; no entropy; quota; missing scope."""
    keys = {"mcp": "k-mcp-" + os.urandom(8).hex(), "quota": "k-quota-" + os.urandom(8).hex(),
            "noscope": "k-noscope-" + os.urandom(8).hex()}
    extra = {"quota": "requests_per_second = 1\n", "noscope": 'scopes = ["entropy:read"]\n'}
    patient = Gateway.empty(keys, extra, tmp, 600_000, logs / "gateway-empty-patient.log")
    hasty = Gateway.empty(keys, extra, tmp, 300, logs / "gateway-empty-hasty.log")
    mcp = McpHttp(patient, keys["mcp"], {"e2e": TOKEN}, tmp, logs / "mcp-http-patient.log",
                  "--gateway-timeout-ms", "600000")
    try:
        async with stdio(patient, keys["mcp"], logs / "mcp-stdio-patient.log", "--gateway-timeout-ms", "600000") as c:
            await slow_call_cancelled(c, "stdio")
        async with http(mcp.url) as c:
            await slow_call_cancelled(c, "http")
            s = await status(c)
            logged = (logs / "mcp-stdio-patient.log").read_text() + mcp.log.read_text()
            check("both servers logged the cancellation (the tool's work was dropped)",
                  logged.count("tool call cancelled by the client") == 2, log_tail(mcp.log))
            check("status over an empty gateway: not serving, bytes of unknown origin",
                  not s["serving"] and s["bytes_are"] == "unknown" and s["pool_bytes"] == 0, s)
        async with stdio(hasty, keys["mcp"], logs / "mcp-stdio-hasty.log") as c:
            r = await c.call_tool("roll_dice", {"notation": "d6"})
            check("no entropy in time: a tool error saying nothing was consumed, try again",
                  r.is_error and r.structured_content["error"] == "unavailable"
                  and "not enough entropy" in text_of(r) and "try again" in text_of(r), text_of(r))
        async with stdio(hasty, keys["quota"], logs / "mcp-stdio-quota.log") as c:
            first = await c.call_tool("gateway_status", {})
            second = await c.call_tool("gateway_status", {})
            retry = (second.structured_content or {}).get("retry_after_ms")
            check("quota: a tool error with the gateway's retry delay",
                  not first.is_error and second.is_error and second.structured_content["error"] == "quota_exhausted"
                  and isinstance(retry, int) and 0 < retry <= 1000 and f"Retry in {retry} ms" in text_of(second),
                  text_of(second))
        async with stdio(hasty, keys["noscope"], logs / "mcp-stdio-noscope.log") as c:
            r = await c.call_tool("gateway_status", {})
            check("a key without status:read: the MCP server's configuration is at fault",
                  r.is_error and r.structured_content["error"] == "server_misconfigured"
                  and "not your request" in text_of(r), text_of(r))
    finally:
        mcp.stop()
        patient.stop()
        hasty.stop()


def inspector(gateway: Gateway, mcp: McpHttp) -> None:
    """The official MCP Inspector's command-line mode lists the tools (stdio and HTTP)."""
    binary = Path(__file__).parent / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
    if os.environ.get("INSPECTOR_UNAVAILABLE"):
        print(f"SKIP inspector --cli: it did not install here ({os.environ['INSPECTOR_UNAVAILABLE']})")
        return
    runs = {
        "stdio": [MCP_BIN, "-e", f"ENTROPY_API_KEY={DEV_KEY}", "-e", f"ENTROPY_GATEWAY_ENDPOINT={gateway.endpoint}",
                  "--method", "tools/list"],
        "http": [mcp.url, "--transport", "http", "--header", f"Authorization: Bearer {TOKEN}", "--method", "tools/list"],
    }
    for name, args in runs.items():
        out = subprocess.run([str(binary), "--cli", *args], capture_output=True, text=True, timeout=120,
                             env=clean_env())
        check(f"MCP Inspector --cli lists every tool over {name}",
              out.returncode == 0 and all(f'"{t}"' in out.stdout for t in cases.TOOLS),
              f"exit {out.returncode}: {out.stdout[-300:]} {out.stderr[-300:]}")


async def main() -> int:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="entropy-mcp-e2e-"))
    logs = tmp / "logs"
    logs.mkdir()
    cases.config_errors(check, MCP_BIN, DEV_KEY)
    gateway = Gateway.dev(DEV_KEY, logs / "gateway-dev.log")
    mcp = McpHttp(gateway, DEV_KEY, {"e2e": TOKEN}, tmp, logs / "mcp-http.log")
    stdio_log = logs / "mcp-stdio.log"
    try:
        async with stdio(gateway, DEV_KEY, stdio_log) as s, http(mcp.url) as h:
            clients = {"stdio": s, "http": h}
            for name, client in clients.items():
                await cases.session(check, client, name)
            await counters_and_no_sharing(gateway, clients)
            await outage_and_recovery(gateway, clients, mcp)
        for name, client in {"stdio": stdio(gateway, DEV_KEY, stdio_log, mode="auto"),
                             "http": http(mcp.url, mode="auto")}.items():
            async with client as c:
                await cases.modern(check, c, name)
        async with stdio(gateway, "wrong-key", logs / "mcp-stdio-wrong-key.log") as c:
            r = await c.call_tool("random_bytes", {"count": 8})
            check("a gateway key the gateway refuses: the MCP server says its own config is wrong",
                  r.is_error and r.structured_content["error"] == "server_misconfigured"
                  and "misconfigured" in text_of(r), text_of(r))
        logged = stdio_log.read_text() + mcp.log.read_text()
        check("the MCP servers log each call, and never the gateway key",
              "tool call served" in logged and DEV_KEY not in logged, log_tail(stdio_log))
        await http_refusals(gateway, tmp, logs / "mcp-http-gate.log")
        await tls(gateway, tmp, logs / "mcp-https.log")
        await refusals(tmp, logs)
        await anyio.to_thread.run_sync(sweep.run, check, gateway, DEV_KEY, logs)
        inspector(gateway, mcp)
        check("SIGTERM stops the HTTP MCP server cleanly (exit 0)", mcp.stop() == 0, log_tail(mcp.log))
    except Exception as e:  # noqa: BLE001 - report, keep the logs, fail
        traceback.print_exception(e)
        check("the run completes", False, f"{type(e).__name__}: {e}")
    finally:
        if mcp.alive():
            mcp.stop()
        gateway.stop()
    print(f"took {time.monotonic() - started:.0f} s; logs in {logs}")
    if not check.failed:
        shutil.rmtree(tmp, ignore_errors=True)
    print(check.summary())
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
