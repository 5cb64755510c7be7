"""The example of auditing someone else's oracle."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cavbench.audit import CheckId, CheckStatus, plan_audit, run_checks

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("examples.calendar_audit")


def test_the_fixed_grader_passes_all_eight(example: ModuleType) -> None:
    plan = plan_audit(example.make_target)
    assert [r.status for r in run_checks(example.make_target, plan)] == [CheckStatus.PASS] * 8


def test_the_buggy_grader_fails_only_order_independence(example: ModuleType) -> None:
    plan = plan_audit(example.make_buggy_target)
    failed = [
        r.check for r in run_checks(example.make_buggy_target, plan) if r.status is CheckStatus.FAIL
    ]
    assert failed == [CheckId.INV_3]
