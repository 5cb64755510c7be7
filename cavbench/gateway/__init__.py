"""Out-of-process candidates: the transport-free gateway session core.

The transports live in their own modules and need their extras: `cavbench.gateway.rest`
(`[rest]`), `cavbench.gateway.mcp_server` (`[mcp]`); `cavbench.gateway.external` runs a
candidate process per episode (`adapter=external`). Nothing in the core imports this package.
"""

from cavbench.gateway._core import (
    ENVELOPE_VERSION,
    Action,
    CapabilityDocument,
    GatewaySession,
    LogEntry,
    LogKind,
    OperationDescriptor,
    OpStatus,
    Rejection,
    RejectReason,
    Reply,
    RequestEnvelope,
    ResponseEnvelope,
    derive_operations,
)
from cavbench.gateway._errors import GatewayError, MissingExtraError, NonLoopbackBindError

__all__ = [
    "ENVELOPE_VERSION",
    "Action",
    "CapabilityDocument",
    "GatewayError",
    "GatewaySession",
    "LogEntry",
    "LogKind",
    "MissingExtraError",
    "NonLoopbackBindError",
    "OpStatus",
    "OperationDescriptor",
    "RejectReason",
    "Rejection",
    "Reply",
    "RequestEnvelope",
    "ResponseEnvelope",
    "derive_operations",
]
