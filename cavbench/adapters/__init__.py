"""Execution strategies and agents: the `ExecutionAdapter` protocol and the baseline engine."""

from cavbench.adapters._engine import (
    BASELINE_PROFILES,
    PROFILE_CAPABILITIES,
    BaselineAdapter,
    Capabilities,
    GateReason,
    Profile,
    StepStatus,
    baseline,
)
from cavbench.adapters._loading import load_adapter
from cavbench.adapters._protocol import AdapterFailure, AdapterResult, ExecutionAdapter

__all__ = [
    "BASELINE_PROFILES",
    "PROFILE_CAPABILITIES",
    "AdapterFailure",
    "AdapterResult",
    "BaselineAdapter",
    "Capabilities",
    "ExecutionAdapter",
    "GateReason",
    "Profile",
    "StepStatus",
    "baseline",
    "load_adapter",
]
