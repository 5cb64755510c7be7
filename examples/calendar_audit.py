"""Put your own benchmark's oracle under cavbench's audit: a worked example.

`examples/calendar_bench` stands in for a benchmark that knows nothing of cavbench. To
audit its grader, write a class with the protocol's methods (no base class, no cavbench
runtime: only the small records from `cavbench.audit`):

- `tasks()`, `reference(task)`, `closing_action(task)`: what your benchmark already has;
- `reset(task)`, `apply(action)`: a fresh environment, one tool call;
- `score()`: call your grader and turn its answer into a `ScoreResult`;
- `read_state()`: digest everything the grader could disturb (the database, the history);
- `arm_fault(probe)`: have the grader call `probe()` once inside its next scoring, after
  it touched state (here through the grader's `hook` argument).

Then run, from the repository root:

    cavbench audit run --target examples.calendar_audit:make_target --out out/audit-calendar
    cavbench audit run --target examples.calendar_audit:make_buggy_target --out out/audit-bug

The first passes all eight checks; the second (expected states cached per task *kind*)
fails INV-3, and the command exits 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cavbench.audit import (
    Action,
    ActionKind,
    Component,
    Probe,
    ScoreResult,
    StateDigest,
    digest_of,
)
from examples.calendar_bench import TASKS, CalendarEnv, Grader

_BY_ID = {t["id"]: t for t in TASKS}
_CLOSE = Action("stop", {}, ActionKind.CLOSE)


class CalendarTarget:
    """The calendar benchmark's grader behind the audit protocol."""

    def __init__(self, grader: Grader, name: str) -> None:
        self._grader = grader  # one grader per target object, as the benchmark keeps one
        self._name = name
        self._env = CalendarEnv()
        self._task: dict[str, Any] = TASKS[0]
        self._probe: Probe | None = None

    @property
    def name(self) -> str:
        return self._name

    def tasks(self) -> Sequence[str]:
        return [t["id"] for t in TASKS]

    def reference(self, task: str) -> Sequence[Action]:
        return [Action(tool, dict(args)) for tool, args in _BY_ID[task]["gold"]]

    def closing_action(self, task: str) -> Action | None:
        return _CLOSE

    def reset(self, task: str) -> None:
        self._task = _BY_ID[task]
        self._env = CalendarEnv()

    def apply(self, action: Action) -> None:
        self._env.step(action.name, dict(action.args))
        if action.kind is ActionKind.CLOSE:
            self.score()  # the benchmark grades when the session ends

    def score(self) -> ScoreResult:
        probe, self._probe = self._probe, None
        result = self._grader.grade(self._env, self._task, hook=probe)
        match = bool(result["db_match"])
        return ScoreResult(result["reward"] == 1.0, (Component("db", match),))

    def read_state(self) -> StateDigest:
        return StateDigest(
            world=digest_of(self._env.db),
            log=tuple(digest_of(list(step)) for step in self._env.history),
        )

    def arm_fault(self, probe: Probe) -> None:
        self._probe = probe


def make_target() -> CalendarTarget:
    """A target factory: each call is a fresh target with a fresh grader."""
    return CalendarTarget(Grader(cache_by="id"), "calendar")


def make_buggy_target() -> CalendarTarget:
    """The same benchmark with its expected states cached per task kind (a real-looking bug)."""
    return CalendarTarget(Grader(cache_by="kind"), "calendar-buggy")
