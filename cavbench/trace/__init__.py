"""Episode records shared by the runtime (writer), the evaluator and the tables (readers)."""

from cavbench.trace._agent import AgentTranscript, MessageRecord, ModelCallRecord, StopReason
from cavbench.trace._fast import fast_init
from cavbench.trace._records import (
    JSON,
    TRACE_SCHEMA_VERSION,
    AdapterReport,
    CompletionStatus,
    EpisodeStatus,
    EpisodeTrace,
    EventType,
    JSONObject,
    LedgerRow,
    Resource,
    State,
    TraceEvent,
    severity_of,
)

__all__ = [
    "JSON",
    "TRACE_SCHEMA_VERSION",
    "AdapterReport",
    "AgentTranscript",
    "CompletionStatus",
    "EpisodeStatus",
    "EpisodeTrace",
    "EventType",
    "JSONObject",
    "LedgerRow",
    "MessageRecord",
    "ModelCallRecord",
    "Resource",
    "State",
    "StopReason",
    "TraceEvent",
    "fast_init",
    "severity_of",
]
