"""Model-driven agents: `LLMAdapter` (adapter=llm), its tools and its one renderer.

An agent sees only the adapter session (`cavbench.runtime.session`) and the model layer;
an import contract keeps the environment, ledger, state store and evaluator out of reach.
"""

from cavbench.agents._adapter import ADAPTER_VERSION, UNREPORTED, Budgets, LLMAdapter
from cavbench.agents._factory import llm_adapter
from cavbench.agents._render import DEFAULT_RENDERER, Renderer, ToolErrorKind
from cavbench.agents._tools import (
    ID_PARAMS,
    MAX_STRING_CHARS,
    WRITE_SPECS,
    OfferedTool,
    OpIdSource,
    ToolKind,
    derive_write_spec,
    id_param,
    offered_tools,
    read_tool_name,
    resolve_write,
    unoffered,
)

__all__ = [
    "MAX_STRING_CHARS",
    "ADAPTER_VERSION",
    "DEFAULT_RENDERER",
    "ID_PARAMS",
    "UNREPORTED",
    "WRITE_SPECS",
    "Budgets",
    "LLMAdapter",
    "OfferedTool",
    "OpIdSource",
    "Renderer",
    "ToolErrorKind",
    "ToolKind",
    "derive_write_spec",
    "id_param",
    "llm_adapter",
    "offered_tools",
    "read_tool_name",
    "resolve_write",
    "unoffered",
]
