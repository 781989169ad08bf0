"""The cases every MCP session goes through (initialize, tools/list, every tool with good and
bad arguments, the status resource), and the config errors of the binary."""

from __future__ import annotations

import json
import math
import re
import subprocess

from mcp import Client
from mcp.shared.exceptions import MCPError

from harness import clean_env, text_of

TOOLS = [
    "random_bytes", "random_integers", "random_floats", "random_uuids", "roll_dice", "shuffle",
    "sample", "generate_password", "generate_passphrase", "gateway_status",
]
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# (tool, arguments, words the error must contain: the argument and its bound)
BAD_ARGUMENTS = [
    ("random_bytes", {"count": 0}, ["`count` is 0", "1..=4096"]),
    ("random_bytes", {"count": 4097}, ["`count` is 4097", "1..=4096"]),
    ("random_bytes", {"count": "many"}, ["`count`", "invalid type"]),
    ("random_bytes", {"count": 8, "encoding": "b64"}, ["`encoding`", "hex", "base64"]),
    ("random_bytes", {"count": 8, "construction": "quantum"}, ["`construction`", "raw", "drbg"]),
    ("random_bytes", {}, ["missing field `count`"]),
    ("random_integers", {"min": 5, "max": 1}, ["`min` (5)", "`max` (1)"]),
    ("random_integers", {"min": 1, "max": 6, "count": 1001}, ["`count` is 1001", "1..=1000"]),
    ("random_integers", {"min": 0, "max": 2**64}, ["`max`"]),
    ("random_floats", {"count": 0}, ["`count` is 0", "1..=1000"]),
    ("random_uuids", {"count": 101}, ["`count` is 101", "1..=100"]),
    ("roll_dice", {"notation": "0d6"}, ["`notation`", "number of dice is 0", "1..=100"]),
    ("roll_dice", {"notation": "2d1"}, ["`notation`", "faces per die is 1", "2..=1000000"]),
    ("roll_dice", {"notation": "two dice"}, ["`notation`", "not dice notation"]),
    ("shuffle", {"items": []}, ["`items` has 0 items", "1..=1000"]),
    ("shuffle", {"items": list(range(1001))}, ["`items` has 1001 items", "1..=1000"]),
    ("sample", {"items": [1, 2, 3], "k": 4}, ["`k` is 4", "1..=3"]),
    ("sample", {"items": [1, 2, 3], "k": 0}, ["`k` is 0", "1..=3"]),
    ("generate_password", {"length": 3}, ["`length` is 3", "4..=256"]),
    ("generate_password", {"alphabet": "emoji"}, ["alphabet", "must be one of alphanumeric"]),
    ("generate_password", {"characters": "abca"}, ["characters repeats 'a'"]),
    ("generate_password", {"alphabet": "hex", "characters": "ab"}, ["not both"]),
    ("generate_passphrase", {"words": 33}, ["`words` is 33", "1..=32"]),
    ("generate_passphrase", {"separator": "---------"}, ["`separator` has 9 characters", "0..=8"]),
    ("generate_passphrase", {"separator": "-\u202e-"}, ["`separator` contains \\u{202e}", "Cc or Cf"]),
    ("generate_password", {"characters": "ab\u2066"}, ["characters contains \\u{2066}", "Cc or Cf"]),
    ("gateway_status", {"verbose": True}, ["unknown field `verbose`"]),
]


def initialize_body() -> bytes:
    return json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw-e2e", "version": "0"}},
    }).encode()


async def call(client: Client, tool: str, args: dict) -> dict:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise AssertionError(f"{tool} {args}: {text_of(result)}")
    return result.structured_content


async def good_calls(check, client: Client, name: str) -> None:
    r = await call(client, "random_bytes", {"count": 64})
    check(f"{name}: random_bytes hex", r["encoding"] == "hex" and len(bytes.fromhex(r["data"])) == 64, r)
    r = await call(client, "random_bytes", {"count": 30, "encoding": "base64"})
    check(f"{name}: random_bytes base64", len(__import__("base64").b64decode(r["data"])) == 30, r)
    check(f"{name}: random_bytes is the pool's bytes unless asked", r["construction"] == "raw"
          and "drbg_instance_id" not in r, r)
    drbg = [await call(client, "random_bytes", {"count": 32, "construction": "drbg"}) for _ in range(2)]
    check(f"{name}: random_bytes drbg is labelled, one instance per call",
          all(d["construction"] == "drbg" and len(bytes.fromhex(d["data"])) == 32
              and re.fullmatch(r"[0-9a-f]{32}", d["drbg_instance_id"]) for d in drbg)
          and drbg[0]["drbg_instance_id"] != drbg[1]["drbg_instance_id"]
          and drbg[0]["data"] != drbg[1]["data"], drbg)
    r = await call(client, "random_integers", {"min": INT64_MIN, "max": INT64_MAX, "count": 100})
    v = r["values"]
    check(f"{name}: random_integers over the full int64 range",
          len(v) == 100 and all(INT64_MIN <= x <= INT64_MAX for x in v) and min(v) < 0 < max(v)
          and len(set(v)) == 100, v[:3])
    r = await call(client, "random_integers", {"min": 1, "max": 6, "count": 1000})
    check(f"{name}: random_integers 1..6 shows every face", set(r["values"]) == set(range(1, 7)), set(r["values"]))
    r = await call(client, "random_integers", {"min": -3, "max": -3})
    check(f"{name}: random_integers with min == max", r["values"] == [-3], r)
    r = await call(client, "random_floats", {"count": 500})
    check(f"{name}: random_floats in [0, 1), 53-bit",
          len(r["values"]) == 500 and all(0 <= x < 1 and math.ldexp(x, 53).is_integer() for x in r["values"]), r["values"][:3])
    r = await call(client, "random_uuids", {"count": 20})
    check(f"{name}: random_uuids are distinct v4", len(set(r["uuids"])) == 20 and all(UUID4.match(u) for u in r["uuids"]), r)
    r = await call(client, "roll_dice", {"notation": "3d6+2"})
    check(f"{name}: roll_dice 3d6+2 gives rolls and total",
          len(r["rolls"]) == 3 and all(1 <= x <= 6 for x in r["rolls"]) and r["total"] == sum(r["rolls"]) + 2
          and r["notation"] == "3d6+2", r)
    r = await call(client, "roll_dice", {"notation": "100d1000000-5"})
    check(f"{name}: roll_dice at its bounds", len(r["rolls"]) == 100 and r["modifier"] == -5, r["notation"])
    items = [f"item-{i}" for i in range(50)] + [{"nested": True}, 7, None]
    r = await call(client, "shuffle", {"items": items})
    check(f"{name}: shuffle returns a permutation of any JSON items",
          sorted(map(json.dumps, r["items"])) == sorted(map(json.dumps, items)) and r["items"] != items
          and r["entropy_bytes_drawn"] > 0, r["items"][:3])
    r = await call(client, "sample", {"items": list(range(20)), "k": 5})
    check(f"{name}: sample picks k distinct items", len(set(r["picked"])) == 5 and set(r["picked"]) <= set(range(20)), r)
    r = await call(client, "sample", {"items": ["only"]})
    check(f"{name}: sample defaults to k = 1", r["picked"] == ["only"], r)
    r = await call(client, "generate_password", {"length": 24, "alphabet": "hex"})
    check(f"{name}: generate_password (hex) reports 96 bits",
          re.fullmatch(r"[0-9a-f]{24}", r["password"]) is not None and r["entropy_bits"] == 96.0 and r["alphabet_size"] == 16, r)
    r = await call(client, "generate_password", {"characters": "ab€"})
    check(f"{name}: generate_password with own characters, default length",
          len(r["password"]) == 20 and set(r["password"]) <= set("ab€") and abs(r["entropy_bits"] - 31.7) < 0.01, r)
    r = await call(client, "generate_passphrase", {"words": 5, "separator": " "})
    check(f"{name}: generate_passphrase: 5 words, 55 bits",
          len(r["words"]) == 5 and r["passphrase"] == " ".join(r["words"]) and r["entropy_bits"] == 55.0
          and r["word_list_size"] == 2048, r)
    r = await call(client, "gateway_status", {})
    check(f"{name}: gateway_status: serving from the OS source, not quantum",
          r["serving"] and r["bytes_are"] == "not_quantum" and any(s["kind"] == "os" and not s["quantum"] for s in r["sources"])
          and "not quantum" in r["summary"], r.get("summary"))


async def session(check, client: Client, name: str) -> None:
    info = client.server_info
    check(f"{name}: initialize names entropy-mcp and warns about transcripts",
          info is not None and info.name == "entropy-mcp" and "transcript" in (client.instructions or ""), info)
    tools = {t.name: t for t in (await client.list_tools()).tools}
    check(f"{name}: tools/list has every tool", sorted(tools) == sorted(TOOLS), sorted(tools))
    schema = tools["random_bytes"].input_schema
    check(f"{name}: schemas state the bounds (random_bytes count 1..=4096)",
          schema["properties"]["count"].get("minimum") == 1 and schema["properties"]["count"].get("maximum") == 4096
          and all(t.description and t.output_schema for t in tools.values()), schema)
    await good_calls(check, client, name)
    wrong = []
    for tool, args, words in BAD_ARGUMENTS:
        result = await client.call_tool(tool, args)
        text = text_of(result)
        if not (result.is_error and result.structured_content.get("error") == "invalid_argument"
                and all(w in text for w in words)):
            wrong.append(f"{tool} {str(args)[:60]} -> {result.is_error} {text[:200]}")
    check(f"{name}: {len(BAD_ARGUMENTS)} bad arguments are tool errors naming the argument and bound",
          not wrong, "; ".join(wrong))
    try:
        await client.call_tool("flip_coin", {})
        check(f"{name}: an unknown tool is a protocol error", False, "no error")
    except MCPError as e:
        check(f"{name}: an unknown tool is a protocol error", "flip_coin" in e.error.message, e.error)
    resources = (await client.list_resources()).resources
    uri = "entropy://gateway/status"
    body = await client.read_resource(uri)
    report = json.loads(body.contents[0].text)
    check(f"{name}: the status resource is listed and reads as JSON",
          [str(r.uri) for r in resources] == [uri] and report["serving"] and "sources" in report, report.get("summary"))


async def modern(check, client: Client, name: str) -> None:
    """The 2026-07-28 protocol (no initialize handshake: server/discover, stateless)."""
    tools = (await client.list_tools()).tools
    r = await client.call_tool("roll_dice", {"notation": "d20"})
    check(f"{name} (protocol {client.protocol_version}): tools and a call work",
          len(tools) == len(TOOLS) and not r.is_error and 1 <= r.structured_content["total"] <= 20, text_of(r))


def config_errors(check, binary: str, key: str) -> None:
    """Bad config exits 64 before serving, naming the key; --print-config shows no secret."""
    cases = [
        (["--transport", "http"], {}, "http_tokens_file"),
        ([], {"ENTROPY_GATEWAY_TIMEOUT_MS": "soon"}, "ENTROPY_GATEWAY_TIMEOUT_MS"),
        (["--http-listen-addr", "nowhere"], {}, "--http-listen-addr"),
        (["--gateway-api-key", "x"], {}, "--gateway-api-key"),
        ([], {"ENTROPY_API_KEY": ""}, "ENTROPY_API_KEY"),
        (["--transport", "http", "--http-tokens-file", "/dev/null", "--http-listen-addr", "0.0.0.0:0"], {},
         "http_listen_addr"),
    ]
    for args, extra, named in cases:
        env = clean_env(**{"ENTROPY_API_KEY": key, **extra})
        if extra.get("ENTROPY_API_KEY") == "":
            env.pop("ENTROPY_API_KEY")
        r = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        check(f"bad config {args or ''} {extra or ''} exits 64 naming {named}",
              r.returncode == 64 and named in r.stderr, f"exit {r.returncode}: {r.stderr}")
    r = subprocess.run([binary, "--print-config"], env=clean_env(ENTROPY_API_KEY=key), capture_output=True,
                       text=True, timeout=30)
    check("--print-config prints every key and no secret",
          r.returncode == 0 and key not in r.stdout and "gateway_endpoint" in r.stdout and "ENTROPY_API_KEY" in r.stdout,
          r.stdout + r.stderr)
    r = subprocess.run([binary, "token", "--name", "laptop"], capture_output=True, text=True, timeout=30)
    token = r.stdout.strip()
    check("`entropy-mcp token` prints a token once and an entry holding only its SHA-256",
          r.returncode == 0 and token.startswith("emt_") and token not in r.stderr and "sha256" in r.stderr,
          r.stdout + r.stderr)
