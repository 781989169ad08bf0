"""Loopback ports for test processes: one picker for every harness in the repo.

Binding port 0 and releasing it is not enough. The kernel may hand the same port to the next
bind(0) of this process (a CI run once gave a collector's metrics endpoint and a gateway's ingest
listener the same port), and a released port in the ephemeral range may become the source port
of any outgoing connection on the machine before the service binds it. So a port is drawn at
random below the ephemeral range (`net.ipv4.ip_local_port_range`), is bound once to check that
nothing holds it, and is never handed out twice by one process.

TEST_PORT_RANGE=LOW-HIGH (inclusive) narrows the draw, for suites run side by side
(clients/test.sh gives each its own range, so two suites never draw the same port at once).
Every harness in the repo reads it the same way.
"""

import os
import random
import socket

_handed_out: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _range() -> tuple[int, int]:
    """Where ports are drawn from: TEST_PORT_RANGE, else 10000 up to the ephemeral range."""
    given = os.environ.get("TEST_PORT_RANGE")
    if given:
        low, _, high = given.partition("-")
        return int(low), int(high)
    return 10000, _ephemeral_low() - 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on now, outside the ephemeral range (or within
    TEST_PORT_RANGE), and not returned before by this process."""
    low, high = _range()
    for _ in range(1000):
        port = random.randint(low, high) if high > low else 0
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise RuntimeError("no free loopback port found in 1000 tries")
