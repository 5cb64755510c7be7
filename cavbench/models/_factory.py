"""Build a model back end from the `model` config group (`conf/model/*.yaml`)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cavbench.errors import ConfigError
from cavbench.models._cache import CachedModel
from cavbench.models._openai import DEFAULT_KEY_ENV, OpenAICompatibleModel
from cavbench.models._protocol import ChatModel
from cavbench.models._records import GenerationSettings, Price
from cavbench.models._replay import ReplayModel
from cavbench.models._scripted import ScriptedModel, import_script, load_script


class ModelKind(StrEnum):
    OPENAI_COMPATIBLE = "openai_compatible"
    SCRIPTED = "scripted"
    REPLAY = "replay"


class CacheConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str | None = None
    """SQLite file of the answer cache (None: no cache)."""
    offline: bool = False
    """A miss is an error instead of a call."""


class ModelConfig(BaseModel):
    """The `model` config group. Holds the *name* of the key's variable, never the key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ModelKind
    name: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    timeout_s: float = 60.0
    """Per-request timeout (the adapter's wall-clock budget can shorten it)."""
    max_retries: int = 3
    script: str | None = None
    """`scripted`: a JSON script file."""
    function: str | None = None
    """`scripted`: a `module:function` taking a ChatRequest and returning an AssistantTurn."""
    sweep_dir: str | None = None
    """`replay`: the recorded sweep's folder."""
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    price: Price | None = None
    cache: CacheConfig = Field(default_factory=CacheConfig)

    @property
    def settings(self) -> GenerationSettings:
        return GenerationSettings(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )

    @classmethod
    def parse(cls, data: Mapping[str, Any] | ModelConfig) -> ModelConfig:
        if isinstance(data, ModelConfig):
            return data
        if not data:
            raise ConfigError(
                "no model configured (fix: add model=openai_compatible, model=scripted or "
                "model=replay to the command line)"
            )
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(f"model config: {exc} (fix: see conf/model/*.yaml)") from exc


def build_model(config: Mapping[str, Any] | ModelConfig) -> ChatModel:
    """The configured back end, wrapped in the answer cache when `cache.path` is set."""
    cfg = ModelConfig.parse(config)
    model: ChatModel
    match cfg.kind:
        case ModelKind.OPENAI_COMPATIBLE:
            model = OpenAICompatibleModel(
                cfg.name or "",
                cfg.base_url,
                api_key_env=cfg.api_key_env,
                timeout_s=cfg.timeout_s,
                max_retries=cfg.max_retries,
            )
        case ModelKind.SCRIPTED:
            if (cfg.script is None) == (cfg.function is None):
                raise ConfigError(
                    "model=scripted needs exactly one of model.script (a JSON file) and "
                    "model.function (module:function)"
                )
            script = load_script(cfg.script) if cfg.script else import_script(str(cfg.function))
            model = ScriptedModel(script, name=cfg.name or "scripted")
        case ModelKind.REPLAY:
            if not cfg.sweep_dir:
                raise ConfigError("model=replay needs model.sweep_dir (the recorded sweep)")
            model = ReplayModel(cfg.sweep_dir, cfg.name, cfg.base_url)
    if cfg.cache.path:
        return CachedModel(model, cfg.cache.path, offline=cfg.cache.offline)
    return model
