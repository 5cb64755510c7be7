"""What a model-driven adapter records about its own run: one row per model call, the
transcript, and the episode's totals. Written by `cavbench.agents`, read by the tables.

Plain frozen records with JSON text for nested payloads, so the trace layer depends on
nothing of the model layer. Untrusted like every adapter report: the evaluator never reads
them; they describe cost and behaviour, not outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StopReason(StrEnum):
    """Why a model-driven episode ended."""

    REPORTED = "report_outcome"
    FINAL_TEXT = "final_text"
    MAX_TURNS = "max_turns"
    TOKEN_BUDGET = "token_budget"
    WALL_CLOCK = "wall_clock"
    INFRA_ERROR = "infra_error"
    """A model call failed for infrastructure reasons after its retries."""
    MODEL_ERROR = "model_error"
    """The endpoint refused the request (a 4xx other than 429)."""


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One model call of an episode (a `model_calls` row without the episode key)."""

    turn: int
    model: str
    base_url: str | None
    request_digest: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    latency_s: float
    finish_reason: str | None
    cost_usd: float | None
    cache_hit: bool
    error_class: str | None
    """`ModelInfraError:<kind>` or `ModelRequestError` when the call failed, else None."""
    response: str | None
    """The assistant turn as JSON text (what `replay` serves), None when the call failed."""


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One message of the transcript (a `messages` row without the episode key)."""

    index: int
    role: str
    content: str | None
    tool_calls: str
    """JSON text: a list of {id, name, arguments} (arguments as the model wrote them)."""
    tool_call_id: str | None


@dataclass(frozen=True, slots=True)
class AgentTranscript:
    """A model-driven episode: totals for `episodes`, calls and messages for their tables."""

    model: str
    temperature: float
    turns: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    """Summed over calls when a price table is configured, else None."""
    stop_reason: StopReason
    op_id_source: str
    """Who chose operation ids and idempotency keys: `model` or `adapter`."""
    calls: tuple[ModelCallRecord, ...] = ()
    messages: tuple[MessageRecord, ...] = ()
    error: str | None = None
    """What ended the episode early (infra or request error), else None."""
    n_invalid_tool_calls: int | None = None
    """Tool calls refused before they acted on the world (unknown tool, arguments not JSON,
    failing the tool's schema, or refused by the facade as unrecordable); None for an
    adapter that does not count them (never a guessed 0)."""
    n_retries: int | None = None
    """Write-tool calls repeating an earlier write of the same operation that did not take
    effect (definitions: `cavbench.agents._reliability`, docs/llm-agents.md); None as above."""
