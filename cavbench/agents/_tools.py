"""The tools a model is offered, generated from the scenario's toolset, and how each call
becomes exactly one facade call.

Write tools take natural arguments (`issue_refund(payment_id, amount, ...)`); the model never
sees the plan. `resolve_write` finds the plan step (narrowed and compensation steps included)
the call stands for — same tool, same resource, same arguments — and writes with that
step's id, logical operation id, changes and arguments, so the world responds exactly as it
does to a profile taking that step. A write the plan does not contain gets its tool's
documented default effect (`WriteSpec.default_changes`) under an adapter-derived step id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cavbench.models import ToolSchema
from cavbench.runtime.session import READ_TOOLS
from cavbench.scenarios import PlannedStep, ScenarioView
from cavbench.trace import JSON


class ToolKind(StrEnum):
    READ = "read"
    WRITE = "write"
    STATUS = "check_operation_status"
    ESCALATE = "escalate"
    CLARIFY = "clarify"
    REPORT = "report_outcome"


class OpIdSource(StrEnum):
    """Who chooses idempotency keys: the model (an optional tool argument) or the adapter
    (a stable key per logical operation, so every retry of a write reuses it)."""

    MODEL = "model"
    ADAPTER = "adapter"


ID_PARAMS: Mapping[str, str] = {
    "order": "order_id",
    "payment": "payment_id",
    "inventory": "sku",
    "account": "account_id",
    "slot": "slot_id",
    "reservation": "reservation_id",
    "carrier": "carrier_id",
    "accounts_aggregate": "aggregate_id",
}
"""The argument that names a resource of each namespace."""

KEY_ARG = "idempotency_key"
VERSION_ARG = "expected_version"
CONTROL_ARGS = frozenset({KEY_ARG, VERSION_ARG})

_STR: dict[str, JSON] = {"type": "string"}
_NUM: dict[str, JSON] = {"type": "number"}
_INT: dict[str, JSON] = {"type": "integer"}
_STRS: dict[str, JSON] = {"type": "array", "items": {"type": "string"}}

Changes = Callable[[Mapping[str, Any], ScenarioView], dict[str, JSON]]


@dataclass(frozen=True, slots=True)
class WriteSpec:
    """A write tool: its namespaces, natural arguments, identity and default effect."""

    description: str
    namespaces: tuple[str, ...]
    """Where it writes; with several, the call names exactly one resource argument."""
    args: Mapping[str, dict[str, JSON]]
    required: tuple[str, ...]
    identity: tuple[str, ...]
    """Arguments that, with tool and resource, name the logical operation of a default write."""
    default_changes: Changes


def _addr(prefix: str) -> Changes:
    return lambda a, _v: {f"{prefix}{k}": a[k] for k in ("line1", "city", "postcode") if k in a}


WRITE_SPECS: Mapping[str, WriteSpec] = {
    "issue_refund": WriteSpec(
        "Refund an amount on a payment.",
        ("payment",),
        {"amount": _NUM, "reason": _STR, "line_item": _STR, "capture_id": _STR, "source": _STR},
        ("amount",),
        ("amount",),
        lambda a, _v: {"refunded": a["amount"]},
    ),
    "cancel_order": WriteSpec(
        "Cancel a whole order.",
        ("order",),
        {"reason": _STR},
        (),
        (),
        lambda _a, _v: {"status": "CANCELLED"},
    ),
    "cancel_order_item": WriteSpec(
        "Cancel one item of an order.",
        ("order",),
        {"item_id": _STR},
        ("item_id",),
        ("item_id",),
        lambda a, _v: {f"items.{a['item_id']}": "CANCELLED"},
    ),
    "change_shipping_address": WriteSpec(
        "Change an order's shipping address.",
        ("order",),
        {"line1": _STR, "city": _STR, "postcode": _STR},
        ("line1", "postcode"),
        (),
        _addr("shipping_address."),
    ),
    "update_carrier_address": WriteSpec(
        "Change the delivery address held by the carrier.",
        ("carrier",),
        {"line1": _STR, "city": _STR, "postcode": _STR},
        ("line1", "postcode"),
        (),
        lambda a, _v: {
            "address_line1": a.get("line1"),
            **{k: a[k] for k in ("city", "postcode") if k in a},
        },
    ),
    "reserve_inventory": WriteSpec(
        "Reserve stock of a SKU for an order.",
        ("inventory",),
        {"qty": _INT, "order_id": _STR, "reason": _STR},
        ("qty",),
        ("order_id",),
        lambda _a, _v: {"reservation_state": "HELD"},
    ),
    "release_inventory": WriteSpec(
        "Release reserved stock (by SKU) or a reservation (by reservation id).",
        ("inventory", "reservation"),
        {"qty": _INT, "order_id": _STR},
        (),
        ("order_id",),
        lambda _a, _v: {"reservation_state": "RELEASED"},
    ),
    "capture_payment": WriteSpec(
        "Capture an authorised payment.",
        ("payment",),
        {"amount": _NUM},
        (),
        (),
        lambda _a, _v: {"status": "CAPTURED"},
    ),
    "apply_account_credit": WriteSpec(
        "Credit an account.",
        ("account",),
        {"amount": _NUM, "reason": _STR, "promotion": _STR},
        ("amount",),
        ("amount",),
        lambda a, _v: {"credit_balance": a["amount"]},
    ),
    "book_service_slot": WriteSpec(
        "Book a service slot for the principal.",
        ("slot",),
        {"service": _STR},
        ("service",),
        (),
        lambda _a, v: {"status": "BOOKED", "booked_by": v.principal.principal_id},
    ),
    "export_customer_data": WriteSpec(
        "Export an account's customer data.",
        ("account",),
        {"fields": _STRS, "format": _STR},
        (),
        (),
        lambda _a, _v: {"pii_export_status": "EXPORTED"},
    ),
}
"""Every write tool the adapter can offer. Toolset entries not listed here are not offered."""

READ_NAMESPACES: Mapping[str, str] = {tool: ns for ns, tool in READ_TOOLS.items()}
_ALIASES = {"get_operation_status": ToolKind.STATUS, "escalate_case": ToolKind.ESCALATE}


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """One tool as offered in an episode: its kind, schema and (reads, writes) namespaces."""

    name: str
    kind: ToolKind
    schema: ToolSchema
    namespaces: tuple[str, ...] = ()
    spec: WriteSpec | None = None

    def resource(self, args: Mapping[str, Any]) -> tuple[str, str] | None:
        """(namespace, resource id) named by the call's arguments, if exactly one is."""
        named = [(ns, str(args[ID_PARAMS[ns]])) for ns in self.namespaces if ID_PARAMS[ns] in args]
        return named[0] if len(named) == 1 else None


def _object(
    properties: Mapping[str, dict[str, JSON]], required: tuple[str, ...]
) -> dict[str, JSON]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


def _read_tool(name: str, namespace: str) -> OfferedTool:
    param = ID_PARAMS[namespace]
    schema = ToolSchema(
        name=name,
        description=f"Read the current {namespace} record (with its version).",
        parameters=_object({param: _STR}, (param,)),
    )
    return OfferedTool(name, ToolKind.READ, schema, (namespace,))


def _write_tool(name: str, spec: WriteSpec, ids: OpIdSource) -> OfferedTool:
    params = [ID_PARAMS[ns] for ns in spec.namespaces]
    properties: dict[str, dict[str, JSON]] = dict.fromkeys(params, _STR)
    properties.update({k: v for k, v in spec.args.items() if k not in properties})
    properties[VERSION_ARG] = {
        "type": "integer",
        "description": "Commit only if the record still has this version (from your read).",
    }
    if ids is OpIdSource.MODEL:
        properties[KEY_ARG] = {
            "type": "string",
            "description": "Reuse the same key when retrying the same operation.",
        }
    required = (params[0], *spec.required) if len(params) == 1 else spec.required
    parameters = _object(properties, required)
    if len(params) > 1:  # exactly one resource argument
        parameters["oneOf"] = [{"required": [p]} for p in params]
    schema = ToolSchema(name=name, description=spec.description, parameters=parameters)
    return OfferedTool(name, ToolKind.WRITE, schema, spec.namespaces, spec)


_FIXED: tuple[OfferedTool, ...] = (
    OfferedTool(
        "check_operation_status",
        ToolKind.STATUS,
        ToolSchema(
            name="check_operation_status",
            description="Whether a write with this idempotency key was committed.",
            parameters=_object({KEY_ARG: _STR}, (KEY_ARG,)),
        ),
    ),
    OfferedTool(
        "escalate",
        ToolKind.ESCALATE,
        ToolSchema(
            name="escalate",
            description="Open a case for a human to approve or finish the request.",
            parameters=_object({"reason": _STR}, ("reason",)),
        ),
    ),
    OfferedTool(
        "clarify",
        ToolKind.CLARIFY,
        ToolSchema(
            name="clarify",
            description="Ask the user a clarifying question.",
            parameters=_object({"question": _STR}, ("question",)),
        ),
    ),
    OfferedTool(
        "report_outcome",
        ToolKind.REPORT,
        ToolSchema(
            name="report_outcome",
            description="Finish: report how the request ended. Call it exactly once, last.",
            parameters=_object(
                {
                    "status": {
                        "type": "string",
                        "enum": ["success", "partial", "pending_recovery", "failed"],
                    },
                    "message": _STR,
                },
                ("status", "message"),
            ),
        ),
    ),
)


def offered_tools(view: ScenarioView, ids: OpIdSource) -> dict[str, OfferedTool]:
    """The episode's tools, in a stable order: the toolset's reads, reads of every namespace
    an offered write touches, the toolset's writes, then the four fixed tools."""
    writes = [name for name in dict.fromkeys(view.toolset) if name in WRITE_SPECS]
    reads = [name for name in dict.fromkeys(view.toolset) if name in READ_NAMESPACES]
    for name in writes:
        for namespace in WRITE_SPECS[name].namespaces:
            tool = READ_TOOLS.get(namespace)
            if tool is not None and tool not in reads:
                reads.append(tool)
    tools = [_read_tool(name, READ_NAMESPACES[name]) for name in reads]
    tools += [_write_tool(name, WRITE_SPECS[name], ids) for name in writes]
    tools += _FIXED
    return {tool.name: tool for tool in tools}


def unoffered(view: ScenarioView) -> tuple[str, ...]:
    """Toolset entries the adapter cannot offer (no spec for them)."""
    known = {*WRITE_SPECS, *READ_NAMESPACES, *_ALIASES}
    return tuple(name for name in view.toolset if name not in known)


def _steps(view: ScenarioView) -> Iterator[PlannedStep]:
    for step in view.plan.steps:
        current: PlannedStep | None = step
        while current is not None:
            yield current
            current = current.narrowed


@dataclass(frozen=True, slots=True)
class ResolvedWrite:
    """The facade write one tool call stands for."""

    step_id: str
    namespace: str
    resource_id: str
    changes: Mapping[str, JSON]
    args: dict[str, JSON]
    logical_operation_id: str
    from_plan: bool


def _comparable(args: Mapping[str, Any], step: PlannedStep, id_param: str) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != id_param or id_param in step.args}


def _compatible(call: Mapping[str, Any], step_args: Mapping[str, Any]) -> bool:
    return all(step_args[k] == v for k, v in call.items() if k in step_args)


def resolve_write(
    view: ScenarioView, tool: OfferedTool, namespace: str, resource_id: str, args: Mapping[str, Any]
) -> ResolvedWrite:
    """The plan step this call stands for, else the tool's default effect (see module doc)."""
    assert tool.spec is not None
    natural = {k: v for k, v in args.items() if k not in CONTROL_ARGS}
    id_param = ID_PARAMS[namespace]
    candidates = [
        s
        for s in _steps(view)
        if s.tool_name == tool.name
        and (s.namespace or "") == namespace
        and (s.resource_id or "") == resource_id
        and s.logical_operation_id is not None
    ]
    exact = [s for s in candidates if _comparable(natural, s, id_param) == dict(s.args)]
    loose = [s for s in candidates if _compatible(_comparable(natural, s, id_param), s.args)]
    chosen = (exact or loose)[0] if (exact or loose) else None
    if chosen is not None and chosen.logical_operation_id is not None:
        return ResolvedWrite(
            step_id=chosen.step_id,
            namespace=namespace,
            resource_id=resource_id,
            changes=chosen.changes,
            args=dict(chosen.args),
            logical_operation_id=chosen.logical_operation_id,
            from_plan=True,
        )
    payload = {k: v for k, v in natural.items() if k != id_param}
    identity = [str(payload[k]) for k in tool.spec.identity if k in payload]
    logical = ":".join([tool.name, resource_id, *identity])
    return ResolvedWrite(
        step_id=f"agent:{logical}",
        namespace=namespace,
        resource_id=resource_id,
        changes=tool.spec.default_changes(natural, view),
        args=payload,
        logical_operation_id=logical,
        from_plan=False,
    )
