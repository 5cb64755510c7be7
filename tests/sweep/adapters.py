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
