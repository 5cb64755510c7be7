"""The tools a model is offered, generated from the scenario's toolset, and how each call
becomes exactly one facade call.

Write tools take natural arguments (`issue_refund(payment_id, amount, ...)`); the model never
sees the plan. `resolve_write` finds the plan step (narrowed and compensation steps included)
the call stands for — same tool, same resource, same arguments — and writes with that
step's id, logical operation id, changes and arguments, so the world responds exactly as it
does to a profile taking that step. A write the plan does not contain gets its tool's
documented default effect (`WriteSpec.default_changes`) under an adapter-derived step id.

The hand-written tables (`ID_PARAMS`, `WRITE_SPECS`, `READ_TOOLS`) cover core-v1. Any other
toolset entry is derived from the scenario view (`derive_write_spec`, `_derived_read`): a write
from the plan steps that use it, a read from the namespace its name or a plan read names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cavbench.models import ToolSchema
from cavbench.runtime.session import READ_TOOLS
from cavbench.scenarios import PlannedStep, ScenarioView, StepKind
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
"""The argument that names a resource of each namespace (others: see `id_param`)."""


def id_param(namespace: str) -> str:
    """The argument naming a resource of `namespace`: `ID_PARAMS`, else `<namespace>_id`
    (non-identifier characters as `_`), else `resource_id`."""
    known = ID_PARAMS.get(namespace)
    if known is not None:
        return known
    derived = re.sub(r"\W", "_", namespace, flags=re.ASCII) + "_id"
    return derived if namespace and derived.isidentifier() else "resource_id"


def read_tool_name(namespace: str) -> str:
    """The read tool of `namespace`, named as the facade names it."""
    return READ_TOOLS.get(namespace) or f"get_{namespace}"


KEY_ARG = "idempotency_key"
VERSION_ARG = "expected_version"
CONTROL_ARGS = frozenset({KEY_ARG, VERSION_ARG})

MAX_STRING_CHARS = 1000
"""Every string argument is bounded: a longer one is refused as a tool error, and a server that
constrains generation by the schema (llama.cpp's grammars, which ignore `max_tokens` for tool
arguments) stops a runaway argument at the bound instead of filling its context window."""
MAX_ITEMS = 100
_STR: dict[str, JSON] = {"type": "string", "maxLength": MAX_STRING_CHARS}
_NUM: dict[str, JSON] = {"type": "number"}
_INT: dict[str, JSON] = {"type": "integer"}
_STRS: dict[str, JSON] = {"type": "array", "items": _STR, "maxItems": MAX_ITEMS}

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
        named = [(ns, str(args[id_param(ns)])) for ns in self.namespaces if id_param(ns) in args]
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
    param = id_param(namespace)
    schema = ToolSchema(
        name=name,
        description=f"Read the current {namespace} record (with its version).",
        parameters=_object({param: _STR}, (param,)),
    )
    return OfferedTool(name, ToolKind.READ, schema, (namespace,))


def _write_tool(name: str, spec: WriteSpec, ids: OpIdSource) -> OfferedTool:
    params = [id_param(ns) for ns in spec.namespaces]
    properties: dict[str, dict[str, JSON]] = dict.fromkeys(params, _STR)
    properties.update({k: v for k, v in spec.args.items() if k not in properties})
    properties[VERSION_ARG] = {
        "type": "integer",
        "description": "Commit only if the record still has this version (from your read).",
    }
    if ids is OpIdSource.MODEL:
        properties[KEY_ARG] = {
            **_STR,
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


_WRITE_KINDS = frozenset({StepKind.WRITE, StepKind.COMPENSATE})


def _json_type(value: object) -> dict[str, JSON]:
    """The JSON-schema type of a plan argument's value (no constraint for null)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return _STR
    if isinstance(value, list):
        return {"type": "array", "maxItems": MAX_ITEMS}
    if isinstance(value, dict):
        return {"type": "object"}
    return {}


def _merge_types(a: dict[str, JSON], b: dict[str, JSON]) -> dict[str, JSON]:
    if a == b:
        return a
    kinds = {str(t.get("type")) for t in (a, b)}
    if kinds == {"integer", "number"}:  # 1 and 1.5 are both numbers
        return _NUM
    return {}


def derive_write_spec(view: ScenarioView, name: str) -> WriteSpec | None:
    """A write tool derived from the plan steps (write or compensate) that use `name`: their
    namespaces, their arguments typed from the values (required when every step has them).
    Its default effect — for a call that matches no plan step — writes the call's natural
    arguments as fields of the record; its identity is all of them. None if no step uses it."""
    steps = [s for s in _steps(view) if s.tool_name == name and s.kind in _WRITE_KINDS]
    namespaces = tuple(dict.fromkeys(s.namespace for s in steps if s.namespace))
    if not namespaces:
        return None
    args: dict[str, dict[str, JSON]] = {}
    for step in steps:
        for key, value in step.args.items():
            typed = _json_type(value)
            args[key] = _merge_types(args[key], typed) if key in args else typed
    required = tuple(k for k in args if all(k in s.args for s in steps))
    keys = tuple(args)

    def default(call: Mapping[str, Any], _view: ScenarioView) -> dict[str, JSON]:
        return {k: call[k] for k in keys if k in call}

    return WriteSpec(
        f"{name.replace('_', ' ').capitalize()} (on {', '.join(namespaces)}).",
        namespaces,
        args,
        required,
        keys,
        default,
    )


def _derived_read(view: ScenarioView, name: str) -> str | None:
    """The namespace a toolset read names: a plan read with that tool name, a plan namespace
    whose read tool it is, else the `get_<namespace>` convention."""
    for step in _steps(view):
        if step.kind is StepKind.READ and step.tool_name == name and step.namespace:
            return step.namespace
    for step in _steps(view):
        if step.namespace and read_tool_name(step.namespace) == name:
            return step.namespace
    return name.removeprefix("get_") if name.startswith("get_") and len(name) > 4 else None


def _toolset_specs(view: ScenarioView) -> tuple[dict[str, WriteSpec], dict[str, str]]:
    """(writes, reads by tool name) for the toolset: hand-written first, then derived."""
    writes: dict[str, WriteSpec] = {}
    reads: dict[str, str] = {}
    for name in dict.fromkeys(view.toolset):
        if name in WRITE_SPECS:
            writes[name] = WRITE_SPECS[name]
        elif name in READ_NAMESPACES:
            reads[name] = READ_NAMESPACES[name]
        elif name in _ALIASES:
            continue
        elif (spec := derive_write_spec(view, name)) is not None:
            writes[name] = spec
        elif (namespace := _derived_read(view, name)) is not None:
            reads[name] = namespace
    return writes, reads


def offered_tools(view: ScenarioView, ids: OpIdSource) -> dict[str, OfferedTool]:
    """The episode's tools, in a stable order: the toolset's reads, reads of every namespace
    an offered write touches, the toolset's writes, then the four fixed tools."""
    writes, reads = _toolset_specs(view)
    for spec in writes.values():
        for namespace in spec.namespaces:
            tool = read_tool_name(namespace)
            if tool not in reads and tool not in writes:
                reads[tool] = namespace
    tools = [_read_tool(name, namespace) for name, namespace in reads.items()]
    tools += [_write_tool(name, spec, ids) for name, spec in writes.items()]
    tools += _FIXED
    return {tool.name: tool for tool in tools}


def unoffered(view: ScenarioView) -> tuple[str, ...]:
    """Toolset entries the adapter cannot offer (neither a spec nor a derivation)."""
    writes, reads = _toolset_specs(view)
    known = {*writes, *reads, *_ALIASES}
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
    param = id_param(namespace)
    candidates = [
        s
        for s in _steps(view)
        if s.tool_name == tool.name
        and (s.namespace or "") == namespace
        and (s.resource_id or "") == resource_id
        and s.logical_operation_id is not None
    ]
    exact = [s for s in candidates if _comparable(natural, s, param) == dict(s.args)]
    loose = [s for s in candidates if _compatible(_comparable(natural, s, param), s.args)]
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
    payload = {k: v for k, v in natural.items() if k != param}
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
