"""Where to connect, with what key, and how stream readers reconnect: the rules every Entropy
Diode client follows (clients/README.md, "What every client does the same way").

- `parse_endpoint` reads the one endpoint syntax (`host[:port]`, `http://`, `https://`,
  `[v6]:port`; port 50051 by default) and decides TLS by the contract's rule.
- `check_api_key` refuses a key the gateway could never accept, saying why and where, never
  what the key is.
- `StreamOptions` holds the reconnect knobs (budget, attempt and stall timeouts, backoff).
- `ENDPOINT_ENV`, `API_KEY_ENV`, `CA_FILE_ENV` name the environment variables that
  `EntropyClient.from_env` reads.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
from dataclasses import dataclass

import grpc

from .errors import InvalidArgumentError

__all__ = [
    "API_KEY_ENV",
    "CA_FILE_ENV",
    "DEFAULT_ENDPOINT",
    "DEFAULT_PORT",
    "ENDPOINT_ENV",
    "MAX_API_KEY_CHARS",
    "Endpoint",
    "StreamOptions",
    "check_api_key",
    "from_environment",
    "parse_endpoint",
]

ENDPOINT_ENV = "ENTROPY_ENDPOINT"
API_KEY_ENV = "ENTROPY_API_KEY"
CA_FILE_ENV = "ENTROPY_CA_FILE"
DEFAULT_ENDPOINT = "127.0.0.1:50051"
DEFAULT_PORT = 50051
MAX_API_KEY_CHARS = 512
"""The gateway's bound on a key's length."""


def _invalid(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(grpc.StatusCode.INVALID_ARGUMENT, message)


@dataclass(frozen=True)
class Endpoint:
    """A parsed endpoint: `host` (an IPv6 address without brackets), `port`, and `tls`."""

    host: str
    port: int
    tls: bool

    @property
    def target(self) -> str:
        """The address as grpc wants it: `host:port`, `[v6]:port`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __str__(self) -> str:
        return ("https://" if self.tls else "http://") + self.target


def is_loopback(host: str) -> bool:
    """`localhost`, an IPv4 address in 127.0.0.0/8, or `::1`."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def parse_endpoint(text: str, *, have_ca_file: bool = False) -> Endpoint:
    """Parse `text` in the endpoint syntax.

    `https://host[:port][/]` is TLS; `http://host[:port][/]` is plaintext (refused when a CA
    file is given); a bare `host[:port]` is TLS unless the host is loopback and no CA file is
    given. The port defaults to 50051; an IPv6 address goes in brackets.

    Raises InvalidArgumentError (a ValueError) quoting `text` and saying what is wrong.
    """

    def bad(why: str) -> InvalidArgumentError:
        return _invalid(f"endpoint {json.dumps(text, ensure_ascii=False)}: {why}")

    if not isinstance(text, str):
        raise TypeError(f"endpoint must be a str, not {type(text).__name__}")
    rest = text
    tls: bool | None = None
    scheme, sep, after = text.partition("://")
    if sep:
        if scheme == "https":
            tls = True
        elif scheme == "http":
            if have_ca_file:
                raise bad("http:// is plaintext, but a CA file (or credentials) was given: use https://")
            tls = False
        else:
            raise bad("the scheme must be http:// or https:// (or none)")
        rest = after
    if rest.endswith("/"):
        rest = rest[:-1]
    if "/" in rest:
        raise bad("nothing may follow host:port but one /")
    port_text: str | None = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise bad("an IPv6 address needs its closing ]")
        host = rest[1:close]
        tail = rest[close + 1 :]
        if tail:
            if not tail.startswith(":"):
                raise bad("only :port may follow the host")
            port_text = tail[1:]
        try:
            if ipaddress.ip_address(host).version != 6:
                raise ValueError
        except ValueError:
            raise bad("not an IPv6 address in brackets") from None
    else:
        host, colon, port = rest.rpartition(":")
        if not colon:
            host = rest
        else:
            port_text = port
        if not host:
            raise bad("no host (expected host:port, http://host:port or https://host:port)")
        if ":" in host:
            raise bad("an IPv6 address goes in brackets: [addr]:port")
        if not set(host) <= _HOST_CHARS:
            raise bad("the host may hold only letters, digits, '.', '-' and '_'")
    port_number = DEFAULT_PORT
    if port_text is not None:
        if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
            raise bad("the port must be a number 1..=65535")
        port_number = int(port_text)
        if not 1 <= port_number <= 65535:
            raise bad("the port must be a number 1..=65535")
    if tls is None:
        tls = have_ca_file or not is_loopback(host)
    return Endpoint(host, port_number, tls)


def check_api_key(key: str | None) -> str:
    """`key` if it is 1..=512 visible ASCII characters (0x21..0x7e); otherwise
    InvalidArgumentError saying which rule it breaks and at what position, never the key."""
    if key is None or key == "":
        raise _invalid(f"API key is missing: pass api_key=, or set {API_KEY_ENV}")
    if not isinstance(key, str):
        raise TypeError(f"api_key must be a str, not {type(key).__name__}")
    if len(key) > MAX_API_KEY_CHARS:
        raise _invalid(f"API key is {len(key)} characters long, at most {MAX_API_KEY_CHARS}")
    for i, c in enumerate(key):
        if not 0x21 <= ord(c) <= 0x7E:
            what = {"\n": "a line break", "\r": "a line break", " ": "a space", "\t": "a tab"}
            raise _invalid(
                f"API key holds {what.get(c, 'a character outside 0x21..0x7e')} at position {i}"
                f" (0-based): keys are 1 to {MAX_API_KEY_CHARS} visible ASCII characters"
                " (0x21..0x7e); check for a trailing newline"
            )
    return key


@dataclass(frozen=True)
class StreamOptions:
    """How a stream reader reconnects after a transport failure (all times in seconds).

    After UNAVAILABLE, the server's shutdown, or an attempt or stall timing out, the reader
    opens a new stream for exactly the bytes still owed, each attempt waiting for the channel
    to be ready, with a jittered backoff between attempts, for at most `reconnect_budget`
    seconds from the failure (0: forever, for daemons). The budget starts again once bytes flow.

    - `reconnect_budget`: how long after a failure the reader keeps trying (default 30).
    - `attempt_timeout`: how long a new stream may take to deliver its first message,
      connecting included (default 2).
    - `stall_timeout`: how long a flowing stream may go without a message, while the reader
      waits for one, before it counts as broken (default 10).
    - `initial_backoff`, `max_backoff`: the delay between attempts starts at 0.05 and doubles
      up to 1; each delay is drawn uniformly from the upper half of its ceiling.
    """

    reconnect_budget: float = 30.0
    attempt_timeout: float = 2.0
    stall_timeout: float = 10.0
    initial_backoff: float = 0.05
    max_backoff: float = 1.0

    def __post_init__(self) -> None:
        if not self.reconnect_budget >= 0:  # also refuses NaN
            raise ValueError("reconnect_budget must be >= 0 (0: keep trying forever)")
        for name in ("attempt_timeout", "stall_timeout", "initial_backoff", "max_backoff"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.max_backoff < self.initial_backoff:
            raise ValueError("max_backoff must be at least initial_backoff")

    def backoff(self, failures: int) -> float:
        """The delay before attempt number `failures + 1` of an outage."""
        ceiling = min(self.max_backoff, self.initial_backoff * 2 ** min(failures, 30))
        return random.uniform(ceiling / 2, ceiling)


def from_environment(
    endpoint: str | None,
    api_key: str | None,
    ca_file: str | os.PathLike[str] | None,
    credentials: grpc.ChannelCredentials | None,
) -> tuple[str, str, str | os.PathLike[str] | None]:
    """The endpoint, key and CA file: each argument given, else its environment variable."""
    if endpoint is None:
        endpoint = os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT
    if api_key is None:
        api_key = os.environ.get(API_KEY_ENV, "")
    if ca_file is None and credentials is None:
        ca_file = os.environ.get(CA_FILE_ENV) or None
    return endpoint, api_key, ca_file
