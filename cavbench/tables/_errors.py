"""Errors raised by the table writers, readers, collect and recompute."""

from __future__ import annotations

from pathlib import Path

from cavbench.errors import CavBenchError


class TableError(CavBenchError):
    """A table file is missing, unreadable, half written, or not of the declared schema.
    Raised by the readers and writers of `cavbench.tables`."""

    def __init__(self, path: Path | str, problem: str, fix: str = "") -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        message = f"{path}: {problem}"
        if fix:
            message += f" (fix: {fix})"
        super().__init__(message)

    def __reduce__(self) -> tuple[type[TableError], tuple[str, str, str]]:
        # Rebuilt from its parts when unpickled (a launcher ships job errors between processes).
        return (type(self), (self.path, self.problem, self.fix))


class SweepError(CavBenchError):
    """A sweep folder cannot be collected or recomputed as asked (no cells, an unfinished
    cell, a pack that changed since the sweep). Raised by `collect` and `recompute`."""
