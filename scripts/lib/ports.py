"""Loopback ports for test processes: one picker for every harness in the repo.

Binding port 0 and releasing it is not enough. The kernel may hand the same port to the next
bind(0) of this process (a CI run once gave a collector's metrics endpoint and a gateway's ingest
listener the same port), and a released port in the ephemeral range may become the source port
of any outgoing connection on the machine before the service binds it. So a port is drawn at
random below the ephemeral range (`net.ipv4.ip_local_port_range`), is bound once to check that
nothing holds it, and is never handed out twice by one process.
"""

import random
import socket

_handed_out: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on `host` that nothing listens on now, outside the ephemeral range, and not
    returned before by this process."""
    high = _ephemeral_low() - 1
    for _ in range(1000):
        port = random.randint(10000, high) if high > 10000 else 0
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
