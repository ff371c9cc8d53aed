"""A network trap for tests: a proxy on 127.0.0.1 that answers nothing and counts who tried to
reach the network through it (`proxied(env)`: the environment that sends HTTP(S) there)."""

from __future__ import annotations

import socket
import threading


class Trap:
    """A proxy that answers nothing and counts who tried to reach the network through it."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.hits = self.sock.getsockname()[1], []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits.append(conn.recv(200))
            conn.close()

    def proxied(self, env: dict) -> dict:
        """`env` with HTTP(S) traffic sent to this trap."""
        proxy = f"http://127.0.0.1:{self.port}"
        return {**env, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy,
                "https_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}
