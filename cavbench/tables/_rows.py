"""Episodes to table rows, and table rows back to the `EpisodeTrace` they came from.

`CellTables` gathers one cell's rows column by column (cheap to append, one Arrow table per
table per `drain`, which the job writes as a row group). `rebuild_trace` inverts the trace part exactly (`as_json()` of the rebuilt
trace equals the original's), which is what lets `recompute` re-score a sweep offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from cavbench.evaluation import ALL_DIMENSIONS, DimensionStatus, Finding, Verdict
from cavbench.redaction import Redactor, current_redactor
from cavbench.tables._io import build_table
from cavbench.tables._schema import PARTITION_KEYS, Table, schema_for
from cavbench.trace import JSON, EpisodeStatus, EpisodeTrace


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dump_json(value: Any) -> str:
    """Compact JSON text, keys in their recorded order (the trace's order is deterministic).
    Read-only mappings (the runtime freezes what it records) are written as objects.
    orjson: encoding these payloads was the largest cost of writing a cell's tables."""
    if not value and isinstance(value, Mapping):
        return "{}"  # the common case (empty args, metadata), without the encoder
    return orjson.dumps(value, default=_plain).decode("utf-8")


@dataclass(frozen=True, slots=True)
class CellContext:
    """What every episode row of one cell shares."""

    sweep: str
    cell: str
    keys: Mapping[str, str]
    """Partition key -> value (the six fixed keys, then the factors)."""
    factors: tuple[str, ...]
    pack_version: str
    pack_digest: str


@dataclass(frozen=True, slots=True)
class EpisodeKey:
    """Which episode of a cell a row belongs to."""

    episode_id: str
    scenario_id: str
    family: str
    seed: int
    repetition: int


def verdict_fields(verdict: Verdict) -> dict[str, Any]:
    """The verdict's columns of `episodes` (what `recompute` compares first)."""
    return {
        "outcome_success": verdict.outcome_success,
        "policy_aware_outcome_success": verdict.policy_aware_outcome_success,
        "commit_valid_success": verdict.commit_valid_success,
        "commit_count": verdict.commit_count,
        "duplicate_logical_effects": dump_json(dict(verdict.duplicate_logical_effects)),
        "recovery_required": verdict.recovery_required,
        "failure_codes": list(verdict.failure_codes),
        "n_findings": len(verdict.findings),
    }


def agent_fields(trace: EpisodeTrace) -> dict[str, Any]:
    """The model-driven columns of `episodes` (all null for an adapter that calls no model)."""
    agent = trace.agent
    if agent is None:
        return dict.fromkeys(_AGENT_COLUMNS)
    return {
        "model_name": agent.model,
        "model_temperature": agent.temperature,
        "model_turns": agent.turns,
        "prompt_tokens": agent.prompt_tokens,
        "completion_tokens": agent.completion_tokens,
        "cost_usd": agent.cost_usd,
        "stop_reason": agent.stop_reason.value,
        "op_id_source": agent.op_id_source,
        "n_invalid_tool_calls": agent.n_invalid_tool_calls,
        "n_retries": agent.n_retries,
    }


_AGENT_COLUMNS = (
    "model_name",
    "model_temperature",
    "model_turns",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "stop_reason",
    "op_id_source",
    "n_invalid_tool_calls",
    "n_retries",
)


def dimension_statuses(verdict: Verdict) -> list[tuple[str, str]]:
    """(dimension, status) in canonical dimension order: the episode's `verdicts` rows."""
    return [
        (d.value, verdict.dimensions.get(d, DimensionStatus.NOT_APPLICABLE).value)
        for d in ALL_DIMENSIONS
    ]


def finding_fields(finding: Finding) -> dict[str, Any]:
    """One finding's columns of `findings` (without the episode key)."""
    return {
        "reason": finding.reason.value,
        "failure_code": finding.failure_code,
        "dimension": finding.dimension,
        "description": finding.description,
        "predicate": None if finding.predicate is None else dump_json(finding.predicate),
        "seq": finding.seq,
        "tool_name": finding.tool_name,
        "resource_refs": list(finding.resource_refs),
        "observed_version": finding.observed_version,
        "actual_version_at_commit": finding.actual_version_at_commit,
        "logical_operation_id": finding.logical_operation_id,
        "count": finding.count,
        "reported_status": finding.reported_status,
        "derived_floor": finding.derived_floor,
    }


def _version_of(resource: JSON) -> int | None:
    if isinstance(resource, dict):
        version = resource.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            return version
    return None


class CellTables:
    """Accumulates the tables of one cell, column by column."""

    def __init__(self, context: CellContext) -> None:
        self.context = context
        self._columns: dict[Table, dict[str, list[Any]]] = {
            table: {name: [] for name in schema_for(table, context.factors).names}
            for table in Table
        }
        self.n_episodes = 0
        self.n_errors = 0
        self.n_infra_errors = 0

    def _append(self, table: Table, row: Mapping[str, Any]) -> None:
        for name, column in self._columns[table].items():
            column.append(row[name])

    def add(self, key: EpisodeKey, trace: EpisodeTrace, verdict: Verdict) -> None:
        """Add one episode's rows to every table."""
        ctx = self.context
        ids = {"episode_id": key.episode_id, "scenario_id": key.scenario_id}
        report = trace.adapter_report
        self._append(
            Table.EPISODES,
            {
                **ids,
                **{name: ctx.keys[name] for name in (*PARTITION_KEYS, *ctx.factors)},
                "sweep": ctx.sweep,
                "cell": ctx.cell,
                "adapter_name": report.adapter_name,
                "adapter_version": report.adapter_version,
                "pack_version": ctx.pack_version,
                "pack_digest": ctx.pack_digest,
                "family": key.family,
                "seed": key.seed,
                "repetition": key.repetition,
                "run_id": trace.run_id,
                "reported_status": report.completion_status,
                "final_message": report.final_message,
                "report_metadata": dump_json(report.metadata),
                "n_events": len(trace.events),
                "n_ledger_rows": len(trace.side_effects),
                "scenario_digest": trace.scenario_digest,
                "status": trace.status.value,
                "error": trace.error,
                **verdict_fields(verdict),
                **agent_fields(trace),
            },
        )
        self._add_agent(ids, trace)
        profile = ctx.keys["profile"]
        for dimension, status in dimension_statuses(verdict):
            self._append(
                Table.VERDICTS,
                {**ids, "profile": profile, "dimension": dimension, "status": status},
            )
        for index, finding in enumerate(verdict.findings):
            self._append(
                Table.FINDINGS,
                {**ids, "profile": profile, "finding_index": index, **finding_fields(finding)},
            )
        for index, event in enumerate(trace.events):
            self._append(
                Table.EVENTS,
                {
                    **ids,
                    "event_index": index,
                    "seq": event.seq,
                    "event_type": event.event_type.value,
                    "source": event.source,
                    "tool_name": event.tool_name,
                    "args": dump_json(event.args),
                    "resource_refs": list(event.resource_refs),
                    "versions_before": dump_json(dict(event.versions_before)),
                    "versions_after": dump_json(dict(event.versions_after)),
                    "logical_operation_id": event.logical_operation_id,
                    "idempotency_key": event.idempotency_key,
                    "response_status": event.response_status,
                    "fault_id": event.fault_id,
                    "metadata": dump_json(event.metadata),
                },
            )
        for index, row in enumerate(trace.side_effects):
            self._append(
                Table.LEDGER,
                {
                    **ids,
                    "row_index": index,
                    "effect_id": row.effect_id,
                    "seq": row.seq,
                    "effect_type": row.effect_type,
                    "logical_operation_id": row.logical_operation_id,
                    "idempotency_key": row.idempotency_key,
                    "resource_ref": row.resource_ref,
                    "payload": dump_json(row.payload),
                    "compensation_for": row.compensation_for,
                },
            )
        for namespace, resources in trace.final_state.items():
            if not resources:
                self._append(
                    Table.STATES,
                    {
                        **ids,
                        "namespace": namespace,
                        "resource_id": None,
                        "version": None,
                        "fields": None,
                    },
                )
            for resource_id, resource in resources.items():
                self._append(
                    Table.STATES,
                    {
                        **ids,
                        "namespace": namespace,
                        "resource_id": resource_id,
                        "version": _version_of(resource),
                        "fields": dump_json(resource),
                    },
                )
        self.n_episodes += 1
        if trace.error is not None:
            self.n_errors += 1
        if trace.status is EpisodeStatus.INFRA_ERROR:
            self.n_infra_errors += 1

    def _add_agent(self, ids: Mapping[str, str], trace: EpisodeTrace) -> None:
        agent = trace.agent
        if agent is None:
            return
        for call in agent.calls:
            self._append(
                Table.MODEL_CALLS,
                {
                    **ids,
                    "turn": call.turn,
                    "model_name": call.model,
                    "base_url": call.base_url,
                    "request_digest": call.request_digest,
                    "prompt_tokens": call.prompt_tokens,
                    "completion_tokens": call.completion_tokens,
                    "cached_tokens": call.cached_tokens,
                    "reasoning_tokens": call.reasoning_tokens,
                    "latency_s": call.latency_s,
                    "finish_reason": call.finish_reason,
                    "cost_usd": call.cost_usd,
                    "cache_hit": call.cache_hit,
                    "error_class": call.error_class,
                    "response": call.response,
                },
            )
        for message in agent.messages:
            self._append(
                Table.MESSAGES,
                {
                    **ids,
                    "message_index": message.index,
                    "role": message.role,
                    "content": message.content,
                    "tool_calls": message.tool_calls,
                    "tool_call_id": message.tool_call_id,
                },
            )

    @property
    def n_buffered(self) -> int:
        """Episodes added since the last `drain`."""
        return len(self._columns[Table.EPISODES]["episode_id"])

    def build(self) -> dict[Table, pa.Table]:
        """One Arrow table per table, in the declared schemas, secrets scrubbed."""
        redactor = current_redactor()
        return {
            table: build_table(
                table,
                _scrubbed(columns, redactor) if redactor.active else columns,
                self.context.factors,
            )
            for table, columns in self._columns.items()
        }

    def drain(self) -> dict[Table, pa.Table]:
        """`build` the rows added since the last drain, and forget them (the counts stay):
        a cell writes its tables in row groups as it goes, so memory does not grow with it."""
        built = self.build()
        for columns in self._columns.values():
            for column in columns.values():
                column.clear()
        return built


def _scrubbed(columns: Mapping[str, list[Any]], redactor: Redactor) -> dict[str, list[Any]]:
    """Every text cell (JSON payloads included) with secret values replaced."""
    text = redactor.text
    out: dict[str, list[Any]] = {}
    for name, values in columns.items():
        out[name] = [
            text(v)
            if type(v) is str
            else [text(x) if type(x) is str else x for x in v]
            if type(v) is list
            else v
            for v in values
        ]
    return out


def rebuild_trace(
    episode: Mapping[str, Any],
    events: Sequence[Mapping[str, Any]],
    ledger: Sequence[Mapping[str, Any]],
    states: Sequence[Mapping[str, Any]],
) -> EpisodeTrace:
    """The `EpisodeTrace` an episode's rows were made from (rows in any order). The error
    column needs no rebuilding: a trace's error is its `run_error` event."""
    final_state: dict[str, dict[str, Any]] = {}
    for row in states:
        bucket = final_state.setdefault(str(row["namespace"]), {})
        if row["resource_id"] is not None:
            bucket[str(row["resource_id"])] = orjson.loads(row["fields"])
    data: dict[str, Any] = {
        "scenario_id": episode["scenario_id"],
        "run_id": episode["run_id"],
        "seed": episode["seed"],
        "scenario_digest": episode.get("scenario_digest") or "",
        "events": [
            {
                "seq": e["seq"],
                "event_type": e["event_type"],
                "source": e["source"],
                "tool_name": e["tool_name"],
                "args": orjson.loads(e["args"]),
                "resource_refs": list(e["resource_refs"] or ()),
                "versions_before": orjson.loads(e["versions_before"]),
                "versions_after": orjson.loads(e["versions_after"]),
                "logical_operation_id": e["logical_operation_id"],
                "idempotency_key": e["idempotency_key"],
                "response_status": e["response_status"],
                "fault_id": e["fault_id"],
                "metadata": orjson.loads(e["metadata"]),
            }
            for e in sorted(events, key=lambda e: int(e["event_index"]))
        ],
        "final_state": final_state,
        "side_effects": [
            {
                "effect_id": r["effect_id"],
                "seq": r["seq"],
                "effect_type": r["effect_type"],
                "logical_operation_id": r["logical_operation_id"],
                "idempotency_key": r["idempotency_key"],
                "resource_ref": r["resource_ref"],
                "payload": orjson.loads(r["payload"]),
                "compensation_for": r["compensation_for"],
            }
            for r in sorted(ledger, key=lambda r: int(r["row_index"]))
        ],
        "adapter_report": {
            **orjson.loads(episode["report_metadata"]),
            "adapter_name": episode["adapter_name"],
            "adapter_version": episode["adapter_version"],
            "final_message": episode["final_message"],
            "completion_status": episode["reported_status"],
        },
    }
    return EpisodeTrace.from_json(data)
