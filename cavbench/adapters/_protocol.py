"""The contract between cavbench and an execution strategy or agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cavbench.runtime.session import AdapterSession
from cavbench.trace import AgentTranscript, CompletionStatus, JSONObject


@dataclass(frozen=True, slots=True)
class AdapterResult:
    """What an adapter returns. Untrusted: only `completion_status` is ever read by the
    evaluator, and only to catch an overclaim (a lie can only hurt the adapter)."""

    final_message: str
    completion_status: CompletionStatus | str = CompletionStatus.SUCCESS
    metadata: JSONObject = field(default_factory=dict)
    agent: AgentTranscript | None = None
    """A model-driven adapter's calls and transcript (becomes `model_calls`/`messages`)."""


@runtime_checkable
class ExecutionAdapter(Protocol):
    """An execution strategy or agent. It acts only through `session.tools`."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def run(self, session: AdapterSession) -> AdapterResult: ...
