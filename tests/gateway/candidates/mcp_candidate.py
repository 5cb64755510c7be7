"""A Python MCP candidate process: a baseline profile over streamable HTTP (argv[1] = profile)."""

import os
import sys

import httpx2
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cavbench.adapters import baseline
from cavbench.gateway.client import McpChannel, run_remote


def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['CAVBENCH_RUN_TOKEN']}"}
    with start_blocking_portal() as portal:
        http = httpx2.AsyncClient(headers=headers)
        transport = streamable_http_client(os.environ["CAVBENCH_GATEWAY_URL"], http_client=http)
        with portal.wrap_async_context_manager(Client(transport)) as client:
            run_remote(baseline(sys.argv[1]), McpChannel(portal, client))
        portal.call(http.aclose)


if __name__ == "__main__":
    main()
