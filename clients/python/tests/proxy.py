"""A TCP relay on 127.0.0.1 whose connections the test can cut, to give a live gateway's
clients a real transport failure (the gateway itself keeps running)."""

from __future__ import annotations

import socket
import threading


class CuttableProxy:
    """Relays 127.0.0.1:<port> to `upstream`. The first connection passes at most
    `first_limit` bytes towards the client and then stalls, so a test knows the client cannot
    have received everything before it calls `cut()`; later connections are not limited."""

    def __init__(self, upstream: str, first_limit: int | None = None) -> None:
        host, port = upstream.rsplit(":", 1)
        self._upstream = (host, int(port))
        self._first_limit = first_limit
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.target = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._released = threading.Event()
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        """Reset every open connection (the listener stays up, so clients can reconnect)."""
        with self._lock:
            for s in self._sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._sockets.clear()
        self._released.set()

    def close(self) -> None:
        self._listener.close()
        self.cut()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self._listener.accept()
            except OSError:
                return  # listener closed
            up = socket.create_connection(self._upstream)
            with self._lock:
                self._sockets += [down, up]
                self.connections += 1
                limit = self._first_limit if self.connections == 1 else None
            threading.Thread(target=self._pump, args=(down, up, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, limit), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while data := src.recv(65536):
                if limit is not None and sent + len(data) > limit:
                    dst.sendall(data[: limit - sent])
                    self._released.wait(30)  # stall until cut
                    return
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass


class BlackHole:
    """Accepts connections on 127.0.0.1 and never answers: a server too slow for any deadline,
    so a client's DEADLINE_EXCEEDED can be tested without racing a fast gateway."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.target = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()
        for s in self._held:
            s.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(conn)  # read nothing, write nothing
