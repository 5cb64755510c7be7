"""The contract between cavbench and an execution strategy or agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cavbench.errors import CavBenchError
from cavbench.runtime.session import AdapterSession
from cavbench.trace import AgentTranscript, CompletionStatus, JSONObject, fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class AdapterResult:
    """What an adapter returns. Untrusted: only `completion_status` is ever read by the
    evaluator, and only to catch an overclaim (a lie can only hurt the adapter)."""

    final_message: str
    completion_status: CompletionStatus | str = CompletionStatus.SUCCESS
    metadata: JSONObject = field(default_factory=dict)
    agent: AgentTranscript | None = None
    """A model-driven adapter's calls and transcript (becomes `model_calls`/`messages`)."""


class AdapterFailure(CavBenchError):
    """An adapter's own infrastructure failed (a candidate process crashed or hung). Raised by
    adapters such as `adapter=external`; the runner records it as the episode's error and
    keeps `metadata` (redacted) on the episode's report."""

    def __init__(self, message: str, metadata: JSONObject | None = None) -> None:
        self.metadata: JSONObject = dict(metadata or {})
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (str(self), self.metadata))


@runtime_checkable
class ExecutionAdapter(Protocol):
    """An execution strategy or agent. It acts only through `session.tools`."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def run(self, session: AdapterSession) -> AdapterResult: ...
