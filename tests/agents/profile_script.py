"""Turn a baseline profile's run into the tool calls a model would make to take the same
actions (the parity golden test's scripted model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cavbench.adapters import baseline
from cavbench.agents import id_param, read_tool_name
from cavbench.models import AssistantTurn, scripted_turn
from cavbench.runtime import AdapterSession, Environment, ToolFacade, ToolResult
from cavbench.runtime.session import WorldPort
from cavbench.scenarios import Scenario
from cavbench.trace import JSON


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


def profile_scripts(scenarios: list[Scenario], profile: str) -> Mapping[str, list[AssistantTurn]]:
    return {s.id: profile_turns(s, profile) for s in scenarios}
