"""Run an ASGI app on loopback in a background thread (uvicorn), for the REST and MCP gateways."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from typing import Any

from cavbench.gateway._errors import GatewayError, NonLoopbackBindError, require_extra

START_TIMEOUT_S = 10.0


def check_loopback(host: str) -> None:
    """Refuse any host that does not resolve solely to loopback (127/8, ::1)."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError as exc:
        raise NonLoopbackBindError(host, f"it does not resolve ({exc})") from exc
    addresses = {str(info[4][0]) for info in infos}
    off = sorted(a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback)
    if not addresses or off:
        raise NonLoopbackBindError(host, f"it resolves to non-loopback address(es) {off}")


class LoopbackServer:
    """uvicorn serving one ASGI app on 127.0.0.1 (port 0 = ephemeral) until `stop()`."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        check_loopback(host)
        uvicorn = require_extra("uvicorn", "rest")
        self._config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="auto"
        )
        self._server = uvicorn.Server(self._config)
        self._thread: threading.Thread | None = None
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> LoopbackServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(
            target=self._server.run, name="cavbench-gateway", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise GatewayError(
                    f"the gateway server did not start on {self.host} within {START_TIMEOUT_S}s"
                )
            time.sleep(0.01)
        sockets = [s for server in self._server.servers for s in server.sockets]
        self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=START_TIMEOUT_S)
        self._thread = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
