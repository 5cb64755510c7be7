"""The model layer: a small `ChatModel` protocol, typed message records and the back ends
(`openai_compatible`, `scripted`, `replay`), plus a content-addressed cache.

It imports nothing of the runtime, the adapters or the evaluator (an import contract checks
it): a model only ever sees messages and tool schemas.
"""

from cavbench.models._cache import CachedModel
from cavbench.models._factory import ModelConfig, build_model
from cavbench.models._openai import DEFAULT_KEY_ENV, OpenAICompatibleModel
from cavbench.models._protocol import ChatModel
from cavbench.models._records import (
    AssistantTurn,
    ChatRequest,
    FinishReason,
    GenerationSettings,
    Message,
    Price,
    Role,
    ToolCall,
    ToolSchema,
    Usage,
    key_inputs,
    request_digest,
)
from cavbench.models._replay import ReplayModel
from cavbench.models._scripted import ScriptedModel, load_script, scripted_turn, turns_script

__all__ = [
    "DEFAULT_KEY_ENV",
    "AssistantTurn",
    "CachedModel",
    "ChatModel",
    "ChatRequest",
    "FinishReason",
    "GenerationSettings",
    "Message",
    "ModelConfig",
    "OpenAICompatibleModel",
    "Price",
    "ReplayModel",
    "Role",
    "ScriptedModel",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "build_model",
    "key_inputs",
    "load_script",
    "request_digest",
    "scripted_turn",
    "turns_script",
]
