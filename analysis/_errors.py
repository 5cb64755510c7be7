"""Errors raised by the analysis layer, all rooted in :class:`cavbench.errors.CavBenchError`."""

from __future__ import annotations

from cavbench.errors import CavBenchError


class AnalysisError(CavBenchError):
    """Base class of every error the analysis layer raises on purpose."""


class TableSchemaError(AnalysisError):
    """A table lacks a column the analysis needs, or holds it with the wrong type.

    Raised by the readers and by every function that takes a frame, before any computation.
    """

    def __init__(self, source: str, column: str, problem: str, fix: str) -> None:
        self.source = source
        self.column = column
        self.problem = problem
        self.fix = fix
        super().__init__(f"{source}: column {column!r}: {problem} (fix: {fix})")


class SweepNotFoundError(AnalysisError):
    """A sweep directory holds no table of the requested kind. Raised by the readers."""


class MixedInputError(AnalysisError):
    """Episodes that must not be pooled would be (for example two scoring rules in one rate).

    Raised before metrics are computed; the message names the column and how to split on it.
    """


class AnalysisConfigError(AnalysisError):
    """An analysis parameter is out of range (resamples, level, k, reference level)."""


class AnalysisWarning(UserWarning):
    """A result is computed but needs care in reading (for example pass^k over tasks that
    ran unequally often). Issued with :func:`warnings.warn`; the message says what to read."""
