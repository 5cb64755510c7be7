"""The declared Arrow schema of every Parquet table a sweep writes, in one place.

Writers build tables with these schemas and readers check files against them, so a column
cannot change name or type silently: a change here bumps `SCHEMA_VERSION`. Flat columns for
everything people group or filter by; free-form payloads (tool arguments, resource fields,
predicates) as JSON text. See `docs/tables.md` for what each column means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

import pyarrow as pa

SCHEMA_VERSION = "3"
"""Version of the table layout below (and of the manifests that describe the files)."""


class Table(StrEnum):
    """The per-episode tables, in the order they are written (`model_calls` and `messages`
    are empty for adapters that call no model)."""

    EPISODES = "episodes"
    VERDICTS = "verdicts"
    FINDINGS = "findings"
    EVENTS = "events"
    LEDGER = "ledger"
    STATES = "states"
    MODEL_CALLS = "model_calls"
    MESSAGES = "messages"

    @property
    def filename(self) -> str:
        return f"{self.value}.parquet"


PARTITION_KEYS: tuple[str, ...] = (
    "profile",
    "adapter",
    "pack_id",
    "scenarios",
    "scoring_rule",
    "seeds",
)
"""Hive folder levels of a cell, outermost first; swept `factors` follow, sorted by name.
Each is also a column of `episodes`, so a hive-partitioned read agrees with the file."""

_STR = pa.string()
_I64 = pa.int64()
_BOOL = pa.bool_()
_F64 = pa.float64()
_STRS = pa.list_(pa.string())
_JSON = pa.string()  # JSON text; documented per column


def _field(name: str, kind: pa.DataType, *, nullable: bool = False) -> pa.Field:
    return pa.field(name, kind, nullable=nullable)


def _opt(name: str, kind: pa.DataType) -> pa.Field:
    return pa.field(name, kind, nullable=True)


_EPISODE_KEY = (_field("episode_id", _STR), _field("scenario_id", _STR))

SCHEMAS: Mapping[Table, pa.Schema] = {
    Table.EPISODES: pa.schema(
        [
            *_EPISODE_KEY,
            _field("sweep", _STR),
            _field("cell", _STR),
            _field("profile", _STR),
            _field("adapter", _STR),
            _field("adapter_name", _STR),
            _field("adapter_version", _STR),
            _field("pack_id", _STR),
            _field("pack_version", _STR),
            _field("pack_digest", _STR),
            _field("scenario_digest", _STR),
            _field("scenarios", _STR),
            _field("scoring_rule", _STR),
            _field("seeds", _STR),
            _field("family", _STR),
            _field("seed", _I64),
            _field("repetition", _I64),
            _field("run_id", _STR),
            _field("outcome_success", _BOOL),
            _field("policy_aware_outcome_success", _BOOL),
            _field("commit_valid_success", _BOOL),
            _field("reported_status", _STR),
            _field("final_message", _STR),
            _field("report_metadata", _JSON),
            _field("commit_count", _I64),
            _field("duplicate_logical_effects", _JSON),
            _field("recovery_required", _BOOL),
            _field("failure_codes", _STRS),
            _field("n_events", _I64),
            _field("n_ledger_rows", _I64),
            _field("n_findings", _I64),
            _field("status", _STR),
            _opt("error", _STR),
            # Model-driven adapters only (null for the profiles); see docs/llm-agents.md.
            _opt("model_name", _STR),
            _opt("model_temperature", _F64),
            _opt("model_turns", _I64),
            _opt("prompt_tokens", _I64),
            _opt("completion_tokens", _I64),
            _opt("cost_usd", _F64),
            _opt("stop_reason", _STR),
            _opt("op_id_source", _STR),
            _opt("n_invalid_tool_calls", _I64),
            _opt("n_retries", _I64),
        ]
    ),
    Table.VERDICTS: pa.schema(
        [
            *_EPISODE_KEY,
            _field("profile", _STR),
            _field("dimension", _STR),
            _field("status", _STR),
        ]
    ),
    Table.FINDINGS: pa.schema(
        [
            *_EPISODE_KEY,
            _field("profile", _STR),
            _field("finding_index", _I64),
            _field("reason", _STR),
            _field("failure_code", _STR),
            _field("dimension", _STR),
            _opt("description", _STR),
            _opt("predicate", _JSON),
            _opt("seq", _I64),
            _opt("tool_name", _STR),
            _field("resource_refs", _STRS),
            _opt("observed_version", _I64),
            _opt("actual_version_at_commit", _I64),
            _opt("logical_operation_id", _STR),
            _opt("count", _I64),
            _opt("reported_status", _STR),
            _opt("derived_floor", _STR),
        ]
    ),
    Table.EVENTS: pa.schema(
        [
            *_EPISODE_KEY,
            _field("event_index", _I64),
            _field("seq", _I64),
            _field("event_type", _STR),
            _field("source", _STR),
            _opt("tool_name", _STR),
            _field("args", _JSON),
            _field("resource_refs", _STRS),
            _field("versions_before", _JSON),
            _field("versions_after", _JSON),
            _opt("logical_operation_id", _STR),
            _opt("idempotency_key", _STR),
            _opt("response_status", _STR),
            _opt("fault_id", _STR),
            _field("metadata", _JSON),
        ]
    ),
    Table.LEDGER: pa.schema(
        [
            *_EPISODE_KEY,
            _field("row_index", _I64),
            _field("effect_id", _STR),
            _field("seq", _I64),
            _field("effect_type", _STR),
            _field("logical_operation_id", _STR),
            _opt("idempotency_key", _STR),
            _field("resource_ref", _STR),
            _field("payload", _JSON),
            _opt("compensation_for", _STR),
        ]
    ),
    Table.STATES: pa.schema(
        [
            *_EPISODE_KEY,
            _field("namespace", _STR),
            _opt("resource_id", _STR),
            _opt("version", _I64),
            _opt("fields", _JSON),
        ]
    ),
    Table.MODEL_CALLS: pa.schema(
        [
            *_EPISODE_KEY,
            _field("turn", _I64),
            _field("model_name", _STR),
            _opt("base_url", _STR),
            _field("request_digest", _STR),
            _field("prompt_tokens", _I64),
            _field("completion_tokens", _I64),
            _field("cached_tokens", _I64),
            _field("reasoning_tokens", _I64),
            _field("latency_s", _F64),
            _opt("finish_reason", _STR),
            _opt("cost_usd", _F64),
            _field("cache_hit", _BOOL),
            _opt("error_class", _STR),
            _opt("response", _JSON),
        ]
    ),
    Table.MESSAGES: pa.schema(
        [
            *_EPISODE_KEY,
            _field("message_index", _I64),
            _field("role", _STR),
            _opt("content", _STR),
            _field("tool_calls", _JSON),
            _opt("tool_call_id", _STR),
        ]
    ),
}
"""One declared schema per table. In `states`, a row with a null `resource_id` stands for a
namespace that holds no resource (so an empty namespace survives the round trip)."""

CELL_COLUMN = "cell"
"""Relative hive path of the cell an episode ran in (also a column of collected tables)."""


def schema_for(table: Table, factors: Sequence[str] = ()) -> pa.Schema:
    """The schema of `table` in a cell whose swept factors are `factors`.

    Factor values are written as strings (a folder name is a string too), as extra
    `episodes` columns after the declared ones; the other tables do not repeat them.
    """
    base = SCHEMAS[table]
    if table is not Table.EPISODES or not factors:
        return base
    return pa.schema([*base, *(_opt(name, _STR) for name in factors)])


def collected_schema(table: Table, factors: Sequence[str] = ()) -> pa.Schema:
    """The schema of a merged table: the declared columns, then the cell and every partition
    key the table does not already hold, as real columns."""
    base = schema_for(table, factors)
    extra = [
        name for name in (CELL_COLUMN, *PARTITION_KEYS, *factors) if base.get_field_index(name) < 0
    ]
    return pa.schema([*base, *(_opt(name, _STR) for name in extra)])


RESERVED_NAMES: frozenset[str] = frozenset(
    name for schema in SCHEMAS.values() for name in schema.names
)
"""Column names a swept factor may not take."""
