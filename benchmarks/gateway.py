"""Time the five baseline profiles on core-v1 in process, over REST and over MCP.

    python benchmarks/gateway.py

Prints episodes per second for each path (200 episodes each; one REST server for all
sessions; MCP in process over the JSON-RPC message loop). Nothing is asserted or written.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from anyio.from_thread import start_blocking_portal
from mcp import Client

from cavbench import baseline, load_pack, run_episodes
from cavbench.adapters import BASELINE_PROFILES, ExecutionAdapter
from cavbench.gateway import GatewaySession
from cavbench.gateway.client import Channel, HttpChannel, McpChannel, ViaGateway
from cavbench.gateway.mcp_server import build_server
from cavbench.gateway.rest import RestGateway


def _rate(wrap: Callable[[ExecutionAdapter], ExecutionAdapter]) -> float:
    pack = load_pack("core-v1")
    start = time.perf_counter()
    n = sum(len(run_episodes(pack, wrap(baseline(p)))) for p in BASELINE_PROFILES)
    return n / (time.perf_counter() - start)


def main() -> None:
    print(f"in process: {_rate(lambda a: a):8.0f} episodes/s")
    with RestGateway() as gateway, httpx.Client() as http:

        def rest(session: GatewaySession) -> tuple[Channel, Callable[[], None]]:
            url = gateway.open(session)
            return HttpChannel(url, session.run_token, http), lambda: gateway.close(session)

        print(f"REST:       {_rate(lambda a: ViaGateway(a, rest)):8.0f} episodes/s")
    with start_blocking_portal() as portal:

        def mcp(session: GatewaySession) -> tuple[Channel, Callable[[], None]]:
            cm = portal.wrap_async_context_manager(Client(build_server(session), mode="legacy"))
            return McpChannel(portal, cm.__enter__()), lambda: cm.__exit__(None, None, None)

        print(f"MCP:        {_rate(lambda a: ViaGateway(a, mcp)):8.0f} episodes/s")


if __name__ == "__main__":
    main()
