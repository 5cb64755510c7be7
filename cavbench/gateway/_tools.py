"""Tool descriptions and result text for tool-calling candidates (MCP), from the session core.

One module on purpose: the tool list (names, descriptions, JSON input schemas) and the one
renderer of a reply as text live here, so that they can later be unified with the LLM
adapter's tool schemas and result renderer. Pure data: no MCP import.

A tool call maps to exactly one request envelope; the session core checks and answers it as
it does a REST request, so the tools enforce exactly what they advertise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cavbench.gateway._core import (
    ENVELOPE_VERSION,
    Action,
    CapabilityDocument,
    OpStatus,
    Rejection,
    Reply,
)

CAPABILITIES_TOOL = "capabilities"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool a candidate may call."""

    name: str
    description: str
    input_schema: dict[str, Any]


def _object(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


_ID = {"type": "string", "minLength": 1}
_KEY = {"type": ["string", "null"]}


def _enum(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": sorted(set(values))}


def tool_specs(document: CapabilityDocument) -> tuple[ToolSpec, ...]:
    """The session's tools: one per advertised action, resources restricted to the advertised."""
    ops = document.operations
    reads = [o for o in ops if o.action is Action.READ]
    specs = [
        ToolSpec(
            CAPABILITIES_TOOL,
            "The session's capability document: the scenario view (request, principal, "
            "policy, plan) and every operation you may call.",
            _object({}),
        )
    ]
    if reads:
        specs.append(
            ToolSpec(
                Action.READ.value,
                "Read a resource's current state (including its version).",
                _object(
                    {
                        "namespace": _enum([o.namespace or "" for o in reads]),
                        "resource_id": _enum([o.resource_id or "" for o in reads]),
                    },
                    ("namespace", "resource_id"),
                ),
            )
        )
    for action, what in (
        (Action.WRITE, "Commit a write"),
        (Action.COMPENSATE, "Commit a compensation"),
    ):
        allowed = [o for o in ops if o.action is action]
        if not allowed:
            continue
        properties: dict[str, Any] = {
            "tool_name": _enum([o.tool_name or "" for o in allowed]),
            "namespace": _enum([o.namespace or "" for o in allowed]),
            "resource_id": _enum([o.resource_id or "" for o in allowed]),
            "operation_id": _ID
            | {"description": "Your logical operation id; keep it across retries."},
            "idempotency_key": _KEY | {"description": "Your dedup key; reuse it on a retry."},
            "expected_version": {"type": ["integer", "null"], "description": "Version guard."},
            "step_id": _ID,
            "changes": {"type": "object"},
            "args": {"type": "object"},
        }
        if action is Action.COMPENSATE:
            properties["compensation_for"] = _ID
        specs.append(
            ToolSpec(
                action.value,
                f"{what} ({', '.join(sorted({o.tool_name or '' for o in allowed}))}). "
                "Statuses: committed, rejected (conflict or replay), failed, ambiguous "
                "(may or may not have committed: check status before retrying).",
                _object(properties, ("tool_name", "namespace", "resource_id", "operation_id")),
            )
        )
    specs += [
        ToolSpec(
            Action.STATUS_CHECK.value,
            "Did a write commit? By idempotency key, or the key last sent for operation_id.",
            _object({"operation_id": _ID, "idempotency_key": _KEY}, ("operation_id",)),
        ),
        ToolSpec(
            Action.ESCALATE.value,
            "Escalate the case to a human.",
            _object({"operation_id": _ID, "reason": {"type": "string"}}, ("operation_id",)),
        ),
        ToolSpec(
            Action.CLARIFY.value,
            "Ask the user a clarifying question.",
            _object({"question": {"type": "string"}}, ("question",)),
        ),
        ToolSpec(
            Action.REPORT.value,
            "Send your final report. completion_status: success, partial, pending_recovery, failed.",
            {
                "type": "object",
                "properties": {
                    "completion_status": {"type": "string"},
                    "final_message": {"type": "string"},
                },
                "required": ["completion_status"],
                "additionalProperties": True,
            },
        ),
    ]
    return tuple(specs)


_ENVELOPE_FIELDS = ("operation_id", "idempotency_key", "expected_version")
_RESOURCE_FIELDS = ("namespace", "resource_id", "tool_name")


def envelope_for(
    tool: str, arguments: Mapping[str, Any], *, token: str, correlation_id: str, scenario_id: str
) -> dict[str, Any]:
    """The request envelope of one tool call (checked by the session core, not here)."""
    args = dict(arguments)
    envelope: dict[str, Any] = {
        "envelope_version": ENVELOPE_VERSION,
        "session_token": token,
        "correlation_id": correlation_id,
        "actor_id": "mcp-candidate",
        "action": tool,
        "operation_id": args.pop("operation_id", None) or f"{tool}:{correlation_id}",
    }
    for name in _ENVELOPE_FIELDS[1:]:
        if name in args:
            envelope[name] = args.pop(name)
    resource = {name: args.pop(name) for name in _RESOURCE_FIELDS if name in args}
    envelope["resource"] = resource or {"namespace": "session", "resource_id": scenario_id}
    if tool == Action.REPORT.value or args:
        envelope["parameters"] = args
    return envelope


def envelope_to_arguments(envelope: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The tool call of a request envelope (the inverse of `envelope_for`, for clients)."""
    action = str(envelope["action"])
    args: dict[str, Any] = {"operation_id": envelope["operation_id"]} if action != "clarify" else {}
    for name in _ENVELOPE_FIELDS[1:]:
        if envelope.get(name) is not None:
            args[name] = envelope[name]
    if action in (Action.READ, Action.WRITE, Action.COMPENSATE):
        args.update(envelope["resource"])
    if action == Action.REPORT:
        args.pop("operation_id", None)
    args.update(envelope.get("parameters") or {})
    return action, args


def render_result(reply: Reply) -> str:
    """The one text rendering of a reply (what a text-only tool caller reads)."""
    if isinstance(reply, Rejection):
        return f"refused ({reply.reason.value}): {reply.detail}"
    head = f"{reply.status.value}"
    if reply.status is OpStatus.AMBIGUOUS:
        head += " (the write may or may not have committed; check status before retrying)"
    parts = [head]
    if reply.message:
        parts.append(reply.message)
    if reply.data is not None:
        parts.append(json.dumps(reply.data, sort_keys=True))
    return "\n".join(parts)
