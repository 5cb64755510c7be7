"""The in-memory world an episode runs in.

`Environment` owns the versioned state store, the append-only ledger, the fault scheduler
and the trace; adapters see it only through `session.AdapterSession` / `session.ToolFacade`.
"""

from cavbench.runtime._environment import Environment
from cavbench.runtime._faults import FaultScheduler
from cavbench.runtime._ledger import Ledger
from cavbench.runtime._state import Mutation, StateStore, copy_json
from cavbench.runtime.session import (
    READ_TOOLS,
    TOOL_EFFECT_TYPE,
    AdapterSession,
    CommitOutcome,
    ToolFacade,
    ToolResult,
    ToolStatus,
)

__all__ = [
    "READ_TOOLS",
    "TOOL_EFFECT_TYPE",
    "AdapterSession",
    "CommitOutcome",
    "Environment",
    "FaultScheduler",
    "Ledger",
    "Mutation",
    "StateStore",
    "ToolFacade",
    "ToolResult",
    "ToolStatus",
    "copy_json",
]
