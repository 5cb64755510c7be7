"""Run an in-process adapter as a gateway candidate (the parity harness)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cavbench.adapters import AdapterResult, ExecutionAdapter
from cavbench.gateway import GatewaySession
from cavbench.gateway.client import Channel, run_remote
from cavbench.runtime import AdapterSession


@dataclass
class ViaGateway:
    """An ExecutionAdapter that serves its session through a gateway and runs `inner` as
    the candidate on the other side of `connect` (a channel factory)."""

    inner: ExecutionAdapter
    connect: Callable[[GatewaySession], tuple[Channel, Callable[[], None]]]

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def version(self) -> str:
        return self.inner.version

    def run(self, session: AdapterSession) -> AdapterResult:
        gateway = GatewaySession(session)
        channel, done = self.connect(gateway)
        try:
            run_remote(self.inner, channel)
        finally:
            done()
        return gateway.result()
