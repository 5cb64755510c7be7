"""The MCP server: per-session tools, refusals as our tool errors, `ambiguous` as a result,
parity with in-process verdicts, stdio and streamable HTTP transports."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters

from cavbench.adapters import baseline
from cavbench.gateway import GatewaySession
from cavbench.gateway.client import Channel, McpChannel, ViaGateway
from cavbench.gateway.external import ExternalAdapter, Transport
from cavbench.gateway.mcp_server import McpHttpGateway, build_server
from cavbench.runner import run_episodes
from cavbench.runtime import Environment
from cavbench.scenarios import load_pack

PACK = load_pack("core-v1")
BY_ID = {s.id: s for s in PACK.scenarios}
# direct and full_lifecycle in the fast suite, the three middle tiers with the slow tests.
PROFILES = [
    "direct",
    pytest.param("policy_gated", marks=pytest.mark.slow),
    pytest.param("commit_guarded", marks=pytest.mark.slow),
    pytest.param("reconciled", marks=pytest.mark.slow),
    "full_lifecycle",
]
Connect = Callable[[GatewaySession], tuple[Channel, Callable[[], None]]]


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as running:
        yield running


@pytest.fixture(scope="module")
def mcp_connect(portal: BlockingPortal) -> Connect:
    def connect(session: GatewaySession) -> tuple[Channel, Callable[[], None]]:
        # legacy mode: the JSON-RPC message loop over in-memory streams
        cm = portal.wrap_async_context_manager(Client(build_server(session), mode="legacy"))
        client = cm.__enter__()
        return McpChannel(portal, client), lambda: cm.__exit__(None, None, None)

    return connect


@pytest.mark.parametrize("profile", PROFILES)
def test_parity_mcp_client_gives_in_process_verdicts(profile: str, mcp_connect: Connect) -> None:
    local = run_episodes(PACK, baseline(profile))
    remote = run_episodes(PACK, ViaGateway(baseline(profile), mcp_connect))
    same = sum(
        a.verdict == b.verdict and a.trace.events == b.trace.events
        for a, b in zip(local, remote, strict=True)
    )
    assert same == 40


def _call(portal: BlockingPortal, session: GatewaySession, name: str, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(build_server(session), mode="legacy") as client:
            tools = await client.list_tools()
            result = await client.call_tool(name, args)
            return [t.name for t in tools.tools], result

    return portal.call(go)


def test_tools_are_per_session_and_refusals_are_our_tool_errors(portal: BlockingPortal) -> None:
    session = GatewaySession(Environment(BY_ID["ST-01"], seed=0).session())
    names, result = _call(
        portal,
        session,
        "write",
        {
            "tool_name": "drop_all_orders",
            "namespace": "order",
            "resource_id": "X",
            "operation_id": "w",
        },
    )
    assert names[:2] == ["capabilities", "read"]
    assert {"status_check", "escalate", "clarify", "report"} <= set(names)
    assert result.is_error is True
    assert result.content[0].text.startswith(
        "refused (capability_violation): write drop_all_orders"
    )
    assert result.structured_content["reason"] == "capability_violation"
    assert session.facade_calls == 0
    _, unknown = _call(portal, session, "rm_rf", {})
    assert unknown.is_error is True
    assert "unknown_operation" in unknown.content[0].text


def test_ambiguous_is_a_distinguished_result_not_an_error(portal: BlockingPortal) -> None:
    session = GatewaySession(Environment(BY_ID["ER-01"], seed=0).session())
    write = next(o for o in session.capabilities().operations if o.action == "write")
    _, result = _call(
        portal,
        session,
        "write",
        {
            "tool_name": write.tool_name,
            "namespace": write.namespace,
            "resource_id": write.resource_id,
            "operation_id": "w",
            "idempotency_key": "k",
        },
    )
    assert result.is_error is False
    assert result.structured_content["status"] == "ambiguous"
    assert result.content[0].text.startswith("ambiguous (the write may or may not have committed")
    assert session.facade_calls == 1


def test_streamable_http_needs_the_run_token() -> None:
    session = GatewaySession(Environment(BY_ID["ST-01"], seed=0).session())
    gateway = McpHttpGateway(session).start()
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            response = httpx.post(gateway.url, json=body, headers=headers)
            assert response.status_code == 401
            assert response.json()["reason"] == "authentication_failed"
    finally:
        gateway.stop()
    assert session.facade_calls == 0


@pytest.mark.slow
def test_an_mcp_candidate_process_over_streamable_http_gives_in_process_verdicts() -> None:
    mock = load_pack("mock")
    candidate = Path(__file__).parent / "candidates" / "mcp_candidate.py"
    local = run_episodes(mock, baseline("full_lifecycle"))
    remote = run_episodes(
        mock, ExternalAdapter(f"{sys.executable} {candidate} full_lifecycle", Transport.MCP)
    )
    assert [b.trace.error for b in remote] == [None] * len(mock.scenarios)
    assert sum(a.verdict == b.verdict for a, b in zip(local, remote, strict=True)) == len(
        mock.scenarios
    )


STDIO_SERVER = """
import anyio
from cavbench.gateway import GatewaySession
from cavbench.gateway.mcp_server import serve_stdio
from cavbench.runtime import Environment
from cavbench.scenarios import load_pack
scenario = next(s for s in load_pack("core-v1").scenarios if s.id == "ST-01")
anyio.run(serve_stdio, GatewaySession(Environment(scenario, seed=0).session()))
"""


@pytest.mark.slow
def test_stdio_transport() -> None:
    async def go() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-c", STDIO_SERVER])
        async with Client(params) as client:
            document = await client.call_tool("capabilities", {})
            read = next(
                o for o in document.structured_content["operations"] if o["action"] == "read"
            )
            return await client.call_tool(
                "read", {"namespace": read["namespace"], "resource_id": read["resource_id"]}
            )

    result = anyio.run(go)
    assert result.is_error is False
    assert result.structured_content["status"] == "ok"
