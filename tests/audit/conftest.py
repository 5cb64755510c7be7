"""Shared audit results, computed once per session (each takes about a second)."""

from __future__ import annotations

import pytest

from cavbench.audit import DEFECT_VARIANTS, TargetAudit, audit_target, load_target

RETAIL_SUBSET = (
    "retail-001",  # cancel
    "retail-005",  # change address
    "retail-013",  # return
    "retail-020",  # cancel + address (two changes)
    "retail-024",  # modify two items
    "retail-027",  # return + exchange
    "retail-030",  # question only (no state change)
    "retail-034",  # cancel + say the refund
)


@pytest.fixture(scope="session")
def network_audit() -> TargetAudit:
    return audit_target(load_target("network"), DEFECT_VARIANTS)


@pytest.fixture(scope="session")
def retail_audit() -> TargetAudit:
    return audit_target(load_target("retail"), DEFECT_VARIANTS, tasks=RETAIL_SUBSET)


@pytest.fixture(scope="session")
def mock_audit() -> TargetAudit:
    return audit_target(load_target("v1/mock"), DEFECT_VARIANTS)


@pytest.fixture(params=["network_audit", "retail_audit", "mock_audit"])
def any_audit(request: pytest.FixtureRequest) -> TargetAudit:
    audit: TargetAudit = request.getfixturevalue(request.param)
    return audit
