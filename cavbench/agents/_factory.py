"""`llm_adapter`: the `adapter.factory._target_` of `conf/adapter/llm.yaml`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cavbench.agents._adapter import Budgets, LLMAdapter
from cavbench.agents._harness import harness_renderer
from cavbench.agents._render import Renderer
from cavbench.agents._tools import OpIdSource
from cavbench.errors import ConfigError
from cavbench.models import ModelConfig, build_model
from cavbench.models._factory import ModelKind
from cavbench.models._replay import recorded_settings


def llm_adapter(
    model: Mapping[str, Any],
    *,
    max_turns: int = 30,
    max_tokens: int | None = 200_000,
    wall_clock_s: float | None = 600.0,
    op_ids: str = OpIdSource.MODEL.value,
    wording: Mapping[str, str] | None = None,
    factors: Mapping[str, Any] | None = None,
) -> LLMAdapter:
    """An `LLMAdapter` over the configured model (see docs/llm-agents.md)."""
    config = ModelConfig.parse(model)
    try:
        source = OpIdSource(op_ids)
    except ValueError:
        raise ConfigError(
            f"adapter.factory.op_ids={op_ids!r}: must be 'model' or 'adapter'"
        ) from None
    fields = set(Renderer.__dataclass_fields__) - {"tool_descriptions", "user_requests"}
    unknown = sorted(set(wording or {}) - fields)
    if unknown:
        raise ConfigError(
            f"adapter.factory.wording: unknown template(s) {unknown} (known: {sorted(fields)})"
        )
    renderer = harness_renderer(factors or {}, wording)
    if max_turns < 1:
        raise ConfigError(f"adapter.factory.max_turns={max_turns}: must be at least 1")
    settings = (
        recorded_settings(str(config.sweep_dir))
        if config.kind is ModelKind.REPLAY and config.sweep_dir
        else config.settings
    )
    return LLMAdapter(
        model=build_model(config),
        settings=settings,
        budgets=Budgets(max_turns=max_turns, max_tokens=max_tokens, wall_clock_s=wall_clock_s),
        op_ids=source,
        renderer=renderer,
        price=config.price,
    )
