"""Test adapters, loaded by import path from adapter configs (`_target_: tests.sweep.adapters.…`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from cavbench.adapters import AdapterResult, ExecutionAdapter, baseline
from cavbench.runtime import AdapterSession


@dataclass(frozen=True)
class CrashingAdapter:
    """The baseline engine, except that it raises inside the episodes of `crash_on`."""

    inner: ExecutionAdapter
    crash_on: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"crashing-{self.inner.name}"

    @property
    def version(self) -> str:
        return "0.0.1"

    def run(self, session: AdapterSession) -> AdapterResult:
        if session.scenario.id in self.crash_on:
            raise RuntimeError(f"adapter bug triggered in {session.scenario.id}")
        return self.inner.run(session)


@dataclass(frozen=True)
class SlowAdapter:
    """The baseline engine, `delay` seconds slower per episode (to interrupt a sweep)."""

    inner: ExecutionAdapter
    delay: float

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def version(self) -> str:
        return self.inner.version

    def run(self, session: AdapterSession) -> AdapterResult:
        time.sleep(self.delay)
        return self.inner.run(session)


def crashing(profile: str, crash_on: list[str]) -> CrashingAdapter:
    return CrashingAdapter(baseline(profile), tuple(crash_on))


def slow(profile: str, delay: float) -> SlowAdapter:
    return SlowAdapter(baseline(profile), delay)


def not_an_adapter(profile: str) -> str:
    return f"I am not an adapter ({profile})"


def reconciled_copy() -> ExecutionAdapter:
    """A custom adapter's factory: no `profile` parameter (its cells carry profile=none)."""
    return baseline("reconciled")


@dataclass(frozen=True)
class RunawayAdapter:
    """The baseline engine, except that it sleeps in `sleep_on` and calls `sys.exit(0)` in
    `exit_on` (issue 9: neither may stop or hang the sweep)."""

    inner: ExecutionAdapter
    sleep_on: tuple[str, ...]
    exit_on: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"runaway-{self.inner.name}"

    @property
    def version(self) -> str:
        return "0.0.1"

    def run(self, session: AdapterSession) -> AdapterResult:
        if session.scenario.id in self.sleep_on:
            time.sleep(3600)
        if session.scenario.id in self.exit_on:
            raise SystemExit(0)
        return self.inner.run(session)


def runaway(profile: str, sleep_on: list[str], exit_on: list[str]) -> RunawayAdapter:
    return RunawayAdapter(baseline(profile), tuple(sleep_on), tuple(exit_on))


@dataclass(frozen=True)
class ContaminatingAdapter:
    """Empties the plan's write steps through `dict.clear` and the world's faults through
    private attributes, then runs the baseline on what is left (issue 9)."""

    inner: ExecutionAdapter

    @property
    def name(self) -> str:
        return f"contaminating-{self.inner.name}"

    @property
    def version(self) -> str:
        return "0.0.1"

    def run(self, session: AdapterSession) -> AdapterResult:
        for step in session.scenario.plan.steps:
            dict.clear(step.changes)
        session.tools._world._faults._by_hook.clear()  # type: ignore[attr-defined]
        return self.inner.run(session)


def contaminating(profile: str) -> ContaminatingAdapter:
    return ContaminatingAdapter(baseline(profile))
