"""Model scripts importable by config (`model.function=tests.agents.scripts:NAME`)."""

from __future__ import annotations

import functools

from cavbench.agents import OpIdSource, ToolKind, offered_tools
from cavbench.models import AssistantTurn, ChatRequest, scripted_turn
from cavbench.scenarios import load_pack
from tests.agents.profile_script import profile_turns


def probe_then_report(request: ChatRequest) -> AssistantTurn:
    """Turn 0: call the first tool with no arguments (an invalid call); then report."""
    if request.turn == 0:
        return scripted_turn("Let me look.", [{"name": request.tools[0].name, "arguments": {}}])
    return scripted_turn(
        None, [{"name": "report_outcome", "arguments": {"status": "success", "message": "done"}}]
    )


@functools.cache
def lifecycle_turns(scenario_id: str) -> tuple[AssistantTurn, ...]:
    for pack in ("core-v1", "netops-v1"):
        for scenario in load_pack(pack).scenarios:
            if scenario.id == scenario_id:
                return tuple(profile_turns(scenario, "full_lifecycle"))
    raise KeyError(scenario_id)


@functools.cache
def write_tools(scenario_id: str) -> frozenset[str]:
    """The write tools offered in `scenario_id`, hand-written or derived from its plan."""
    for pack in ("core-v1", "netops-v1"):
        for scenario in load_pack(pack).scenarios:
            if scenario.id == scenario_id:
                tools = offered_tools(scenario.view(), OpIdSource.MODEL)
                return frozenset(n for n, t in tools.items() if t.kind is ToolKind.WRITE)
    raise KeyError(scenario_id)


def text_sensitive(request: ChatRequest) -> AssistantTurn:
    """The scripted text-sensitive agent of the harness-factor control.

    It takes full_lifecycle's actions, but sends its first write once with no arguments
    first. It retries that write only when the rendered error names the tool that failed
    (so it can tell which call to redo); otherwise it gives up and reports `failed`. The
    error_style levels `cavbench` and `mcp_sdk` name the tool; `tau2` and `terse` do not.
    """
    script = lifecycle_turns(request.scenario_id)
    writes = write_tools(request.scenario_id)
    first_write = next(
        (i for i, t in enumerate(script) if t.tool_calls and t.tool_calls[0].name in writes),
        None,
    )
    turn = request.turn
    if first_write is None or turn < first_write:
        return script[turn]
    if turn == first_write:
        return scripted_turn(None, [{"name": script[turn].tool_calls[0].name, "arguments": {}}])
    replies = [m for m in request.messages if m.role == "tool"]
    error = replies[first_write].content or ""
    if script[first_write].tool_calls[0].name in error:
        return script[turn - 1]
    return scripted_turn(
        None,
        [{"name": "report_outcome", "arguments": {"status": "failed", "message": "gave up"}}],
    )
