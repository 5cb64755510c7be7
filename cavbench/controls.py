"""Scripted control agents that experiments reference (`model.function=cavbench.controls:NAME`).

A control is a scripted model (`model=scripted`) whose behaviour is known in advance, so a
study can check that its analysis finds exactly that behaviour (docs/harness-factors.md,
Controls). They live in the package, not in the tests, so `experiment=harness_text_sensitive`
runs from an installed cavbench too.

A control knows the scenario it plays (it replays a baseline profile's facade calls as tool
calls, computed on its own fresh world), which no real agent does: that is what makes its
effect known. It never touches the episode's world, which it reaches only through its tool
calls, like any model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from cavbench.adapters import baseline
from cavbench.agents import OpIdSource, ToolKind, id_param, offered_tools, read_tool_name
from cavbench.errors import ConfigError
from cavbench.models import AssistantTurn, ChatRequest, scripted_turn
from cavbench.runtime import AdapterSession, Environment, ToolFacade, ToolResult
from cavbench.runtime.session import WorldPort
from cavbench.scenarios import Scenario, load_pack
from cavbench.trace import JSON

CONTROL_PACKS: tuple[str, ...] = ("core-v1", "netops-v1")
"""The built-in packs whose scenarios the controls below know by id."""


class RecordingFacade(ToolFacade):
    """The real facade, noting each call as the tool call that would make it."""

    __slots__ = ("calls",)

    def __init__(self, world: WorldPort) -> None:
        super().__init__(world)
        self.calls: list[dict[str, Any]] = []

    def read(self, namespace: str, resource_id: str, tool_name: str | None = None) -> ToolResult:
        self.calls.append(
            {"name": read_tool_name(namespace), "arguments": {id_param(namespace): resource_id}}
        )
        return super().read(namespace, resource_id, tool_name)

    def write(self, **kw: Any) -> ToolResult:
        args: dict[str, JSON] = {id_param(kw["namespace"]): kw["resource_id"], **kw["args"]}
        if kw["idempotency_key"] is not None:
            args["idempotency_key"] = kw["idempotency_key"]
        if kw.get("expected_version") is not None:
            args["expected_version"] = kw["expected_version"]
        self.calls.append({"name": kw["tool_name"], "arguments": args})
        return super().write(**kw)

    def status_check(self, idempotency_key: str) -> ToolResult:
        self.calls.append(
            {"name": "check_operation_status", "arguments": {"idempotency_key": idempotency_key}}
        )
        return super().status_check(idempotency_key)

    def escalate(self, reason: str, logical_operation_id: str) -> ToolResult:
        self.calls.append({"name": "escalate", "arguments": {"reason": reason}})
        return super().escalate(reason, logical_operation_id)

    def clarify(self, question: str) -> ToolResult:
        self.calls.append({"name": "clarify", "arguments": {"question": question}})
        return super().clarify(question)


def profile_turns(scenario: Scenario, profile: str) -> list[AssistantTurn]:
    """One tool call per turn, exactly the profile's facade calls, then report_outcome."""
    env = Environment(scenario)
    facade = RecordingFacade(env)
    result = baseline(profile).run(AdapterSession(scenario.view(), facade))
    report = {
        "name": "report_outcome",
        "arguments": {"status": str(result.completion_status), "message": result.final_message},
    }
    return [scripted_turn(None, [call]) for call in [*facade.calls, report]]


def profile_scripts(
    scenarios: Sequence[Scenario], profile: str
) -> Mapping[str, list[AssistantTurn]]:
    """`profile_turns` of each scenario, by scenario id."""
    return {s.id: profile_turns(s, profile) for s in scenarios}


@functools.cache
def _scenario(scenario_id: str) -> Scenario:
    for pack in CONTROL_PACKS:
        for scenario in load_pack(pack).scenarios:
            if scenario.id == scenario_id:
                return scenario
    raise ConfigError(
        f"model.function: scenario {scenario_id} is not in the packs the control agents know "
        f"({', '.join(CONTROL_PACKS)}) (fix: run them on scenarios=core-v1 or netops-v1)"
    )


@functools.cache
def lifecycle_turns(scenario_id: str) -> tuple[AssistantTurn, ...]:
    """full_lifecycle's actions on `scenario_id` as turns (cached: the answer never changes)."""
    return tuple(profile_turns(_scenario(scenario_id), "full_lifecycle"))


@functools.cache
def write_tools(scenario_id: str) -> frozenset[str]:
    """The write tools offered in `scenario_id`, hand-written or derived from its plan."""
    tools = offered_tools(_scenario(scenario_id).view(), OpIdSource.MODEL)
    return frozenset(n for n, t in tools.items() if t.kind is ToolKind.WRITE)


def text_sensitive(request: ChatRequest) -> AssistantTurn:
    """The scripted text-sensitive agent of the harness-factor control.

    It takes full_lifecycle's actions, but sends its first write once with no arguments
    first. It retries that write only when the rendered error names the tool that failed
    (so it can tell which call to redo); otherwise it gives up and reports `failed`. The
    error_style levels `cavbench` and `mcp_sdk` name the tool; `tau2` and `terse` do not.
    So under `cavbench` an episode with a write has one invalid tool call and at least one
    retry; under `tau2` the same invalid call and no retry.
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
