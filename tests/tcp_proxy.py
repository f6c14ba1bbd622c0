"""A TCP proxy on 127.0.0.1 in front of a real server, cut and restored at will: a network outage
for one client, while the server itself (the suite's shared Elasticsearch) keeps serving the
other tests."""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit


class TcpProxy:
    """Forwards every connection to `upstream` (an http URL) until `cut`; `restore` listens again
    on the same port. While cut, connections are refused and open ones are closed."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.restore()
        self.url = f"http://127.0.0.1:{self.port}"

    def restore(self) -> None:
        """Accept connections again (on the port of the first start)."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and close the open ones: the server is gone, for the client."""
        listener, self._listener = self._listener, None
        with self._lock:
            closing = [*self._open, *([listener] if listener is not None else [])]
            self._open.clear()
        for sock in closing:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    close = cut

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut: the listener is closed
                return
            try:
                server = socket.create_connection(self._target, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    server.close()
                    return
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:  # either side gone: both directions end, each pump closes its source
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
            source.close()
