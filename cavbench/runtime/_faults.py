"""One-shot fault scheduler with CAV-Bench's `ordinal` semantics (SPEC a.5, b.2).

Each injection fires at most once per episode, the first time its hook is reached.
`ordinal` only orders injections that share a hook: they fire together, sorted by
`(hook, ordinal, fault_id)`. It is *not* "the n-th occurrence".
"""

from __future__ import annotations

from collections.abc import Iterable

from cavbench.scenarios import Injection


class FaultScheduler:
    __slots__ = ("_by_hook", "_fired")

    def __init__(self, injections: Iterable[Injection]) -> None:
        by_hook: dict[str, list[Injection]] = {}
        for injection in sorted(injections, key=lambda i: (i.hook, i.ordinal, i.fault_id)):
            by_hook.setdefault(injection.hook, []).append(injection)
        self._by_hook = by_hook
        self._fired: list[str] = []

    def fork(self) -> FaultScheduler:
        """A scheduler with this one's pending injections, none of them fired (for another
        episode of the same scenario)."""
        other = FaultScheduler.__new__(FaultScheduler)
        other._by_hook = dict(self._by_hook)  # `fire` pops hooks; the lists are only read
        other._fired = []
        return other

    @property
    def pending(self) -> bool:
        """Whether any hook still has injections to fire."""
        return bool(self._by_hook)

    def fire(self, hook: str) -> list[Injection]:
        """Injections due at `hook` that have not fired yet; marks them fired."""
        # Everything at a hook fires the first time it is reached, so the hook is done after.
        pending = self._by_hook.pop(hook, None)
        if pending is None:
            return []
        due = []
        for injection in pending:  # one fault id fires once, even if listed twice on a hook
            if injection.fault_id not in self._fired:
                self._fired.append(injection.fault_id)
                due.append(injection)
        return due

    @property
    def fired(self) -> tuple[str, ...]:
        """Fault ids in firing order."""
        return tuple(self._fired)
