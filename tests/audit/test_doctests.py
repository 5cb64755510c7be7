"""The audit modules' docstring examples run."""

from __future__ import annotations

import doctest

from cavbench.audit import _bootstrap


def test_bootstrap_doctests() -> None:
    result = doctest.testmod(_bootstrap)
    assert result.attempted >= 3
    assert result.failed == 0
