"""Harness factors: versioned wordings of the renderer, one text asset per level.

A level is a JSON file `assets/harness/<factor>/<level>.json` holding `Renderer` templates;
its digest (SHA-256 of the file's bytes, first 16 hex digits) names exactly the text the
agent saw. A sweep picks a level with the Hydra group `harness/<factor>=<level>`, which sets
the swept factors `harness_<factor>` and `harness_<factor>_digest` (so both are `episodes`
columns); `llm_adapter` loads the level and refuses a digest that is not the asset's.
See docs/harness-factors.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files
from importlib.resources.abc import Traversable

import orjson

from cavbench.agents._render import Renderer
from cavbench.errors import ConfigError

DIGEST_LENGTH = 16
"""Hex digits of the SHA-256 kept as a level's digest (a folder level, so kept short)."""


class HarnessFactor(StrEnum):
    """A part of the rendered text that a study may vary."""

    ERROR_STYLE = "error_style"
    SYSTEM_PROMPT = "system_prompt"
    POLICY_DOC = "policy_doc"
    TOOL_DESC = "tool_desc"
    USER_LANG = "user_lang"


FACTOR_FIELDS: Mapping[HarnessFactor, frozenset[str]] = {
    HarnessFactor.ERROR_STYLE: frozenset({"error"}),
    HarnessFactor.SYSTEM_PROMPT: frozenset({"system"}),
    HarnessFactor.POLICY_DOC: frozenset(
        {
            "policy_header",
            "principal",
            "delegation",
            "intent",
            "max_amount",
            "items",
            "ambiguous",
            "on_block",
        }
    ),
    HarnessFactor.TOOL_DESC: frozenset({"tool_descriptions"}),
    HarnessFactor.USER_LANG: frozenset({"user", "user_requests"}),
}
"""The `Renderer` templates each factor's levels may set (and no others)."""

DEFAULT_LEVELS: Mapping[HarnessFactor, str] = {
    factor: "en" if factor is HarnessFactor.USER_LANG else "cavbench" for factor in HarnessFactor
}
"""The level of each factor that reproduces the renderer's built-in wording exactly."""


@dataclass(frozen=True, slots=True)
class HarnessLevel:
    """One level of a harness factor: its name, the digest of its asset and its templates."""

    factor: HarnessFactor
    level: str
    digest: str
    templates: Mapping[str, str]
    tool_descriptions: Mapping[str, str]
    user_requests: Mapping[str, str] | None


def _asset_dir(factor: HarnessFactor) -> Traversable:
    return files("cavbench.agents").joinpath("assets", "harness", factor.value)


def levels(factor: HarnessFactor) -> tuple[str, ...]:
    """The levels shipped for `factor`, sorted."""
    return tuple(
        sorted(
            p.name.removesuffix(".json")
            for p in _asset_dir(factor).iterdir()
            if p.name.endswith(".json")
        )
    )


def load_level(factor: HarnessFactor, level: str) -> HarnessLevel:
    """Read a level's asset; an unknown level or a malformed asset is a `ConfigError`."""
    asset = _asset_dir(factor).joinpath(f"{level}.json")
    where = f"harness/{factor.value}={level}"
    if not asset.is_file():
        raise ConfigError(
            f"{where}: no text asset cavbench/agents/assets/harness/{factor.value}/{level}.json "
            f"(known levels: {list(levels(factor))})"
        )
    raw = asset.read_bytes()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{where}: the asset is not JSON ({exc}); fix the file") from None
    allowed = FACTOR_FIELDS[factor]
    if not isinstance(body, dict) or not all(
        isinstance(k, str) and k in allowed and _is_text(v) for k, v in body.items()
    ):
        raise ConfigError(
            f"{where}: the asset must be a JSON object of templates among {sorted(allowed)}"
        )
    digest = hashlib.sha256(raw).hexdigest()[:DIGEST_LENGTH]
    descriptions = body.pop("tool_descriptions", {})
    requests = body.pop("user_requests", None)
    return HarnessLevel(
        factor,
        level,
        digest,
        dict(body),
        dict(descriptions),
        None if requests is None else dict(requests),
    )


def _is_text(value: object) -> bool:
    """A template, or (tool_descriptions) a mapping of names to texts."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return isinstance(value, str)


def harness_renderer(
    factors: Mapping[str, object], wording: Mapping[str, str] | None = None
) -> Renderer:
    """The renderer the swept `harness_<factor>` levels in `factors` select, with `wording`
    (explicit template overrides) on top.

    `factors` is the cell's `factors` mapping; other keys are ignored. A
    `harness_<factor>_digest` that is not the level asset's digest is a `ConfigError`: the
    recorded digest must name the text the agent saw.
    """
    templates: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    requests: Mapping[str, str] | None = None
    for factor in HarnessFactor:
        key = f"harness_{factor.value}"
        if key not in factors:
            continue
        level = load_level(factor, str(factors[key]))
        recorded = factors.get(f"{key}_digest")
        if recorded is not None and str(recorded) != level.digest:
            raise ConfigError(
                f"factors.{key}_digest={recorded!r} is not the digest {level.digest!r} of "
                f"harness/{factor.value}={level.level}; the asset changed after the group "
                f"file was written: add a new level instead of editing one"
            )
        templates.update(level.templates)
        descriptions.update(level.tool_descriptions)
        requests = level.user_requests if level.user_requests is not None else requests
    return Renderer(
        **{**templates, **dict(wording or {})},
        tool_descriptions=descriptions,
        user_requests=requests,
    )
