"""The audit's target protocol: four operations and three small frozen records.

An oracle under audit is reached only through an :class:`AuditTarget`: ``reset(task)``,
``apply(action)``, ``score()`` and ``read_state()``, plus the task list, each task's
reference trajectory, an optional session-ending action and one probe hook for the
exception-recovery invariant. Nothing here knows about cavbench's runtime: anyone can wrap
their own benchmark's oracle by implementing these methods (see ``examples/``).

This module imports only the standard library and ``cavbench.errors``, on purpose.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, Protocol, TypeAlias, runtime_checkable

from cavbench.errors import CavBenchError

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None
JSONObject: TypeAlias = dict[str, JSON]


class AuditError(CavBenchError):
    """The audit was asked for something that does not exist or is malformed (a target
    name, a records file, a task id). Raised by the audit's loaders and CLI."""


class InjectedFault(Exception):
    """The exception the INV-4 probe raises inside scoring.

    Deliberately *not* a :class:`CavBenchError`: an oracle must not be able to tell it from
    any other bug in its own code.
    """


class ActionKind(StrEnum):
    """Whether an action is an ordinary tool call or the turn that ends the session."""

    TOOL = "tool"
    CLOSE = "close"


def canonical_json(value: object) -> str:
    """Key-sorted, whitespace-free JSON: the one serialisation digests are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def json_copy(value: JSON) -> JSON:
    """A deep copy of a JSON value (marshal round trip: an order of magnitude faster than
    ``copy.deepcopy``, and JSON values are all marshal can hold anyway)."""
    copied: JSON = marshal.loads(marshal.dumps(value))
    return copied


def copy_object(value: JSONObject) -> JSONObject:
    """:func:`json_copy` of a JSON object, typed as one."""
    copied: JSONObject = marshal.loads(marshal.dumps(value))
    return copied


def digest_of(value: object) -> str:
    """SHA-256 (hex, first 16 bytes) of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Action:
    """One action of a trajectory: a tool call by name with JSON arguments."""

    name: str
    args: JSONObject = field(default_factory=dict)
    kind: ActionKind = ActionKind.TOOL

    def as_json(self) -> JSONObject:
        return {"name": self.name, "args": self.args, "kind": self.kind.value}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Action:
        args = data.get("args") or {}
        if not isinstance(args, dict):
            raise AuditError(f"action {data!r}: field 'args' must be an object (fix: use {{}})")
        return cls(
            name=str(data["name"]),
            args=args,
            kind=ActionKind(str(data.get("kind", ActionKind.TOOL.value))),
        )

    @property
    def digest(self) -> str:
        # Logs are digested on every read_state, and mostly hold the same few reference
        # actions: cache by identity (the action is kept alive with its digest, so an id
        # is never reused while cached).
        hit = _ACTION_DIGESTS.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        value = digest_of(self.as_json())
        if len(_ACTION_DIGESTS) >= _ACTION_CACHE_SIZE:
            _ACTION_DIGESTS.clear()
        _ACTION_DIGESTS[id(self)] = (self, value)
        return value


_ACTION_CACHE_SIZE: Final = 65536
_ACTION_DIGESTS: dict[int, tuple[Action, str]] = {}


@dataclass(frozen=True, slots=True)
class Component:
    """One named part of a verdict (a database match, a required output, a dimension)."""

    name: str
    passed: bool


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """An oracle's verdict on the episode so far.

    Two results are the same verdict when ``passed`` and the components agree; ``note`` is
    free text for people and takes no part in equality.
    """

    passed: bool
    components: tuple[Component, ...] = ()
    note: str = field(default="", compare=False)

    def component(self, name: str) -> Component | None:
        for comp in self.components:
            if comp.name == name:
                return comp
        return None

    def as_json(self) -> JSONObject:
        return {
            "passed": self.passed,
            "components": {c.name: c.passed for c in self.components},
        }

    def brief(self) -> str:
        parts = ",".join(f"{c.name}={'P' if c.passed else 'F'}" for c in self.components)
        return f"{'PASS' if self.passed else 'FAIL'}[{parts}]"


@dataclass(frozen=True, slots=True)
class StateDigest:
    """Everything the oracle could disturb, as digests: the world and the action log.

    ``log`` holds one digest per logged entry, so a check can tell "one entry appended"
    from "the log was rewritten".
    """

    world: str
    log: tuple[str, ...] = ()
    effects: str | None = None
    """Optional digest of the agent's own net effects, for targets whose world also moves
    by itself (scheduled faults, other writers) or keeps bookkeeping that a compensated
    attempt leaves behind (versions, a ledger). The audit's plan uses it, when present, to
    decide which actions change state; the invariants compare the whole digest."""

    @property
    def net(self) -> str:
        """What decides whether an action changed state: ``effects`` if given, else ``world``."""
        return self.world if self.effects is None else self.effects

    def extends(self, before: StateDigest, *, extra: int) -> bool:
        """True when this digest is ``before`` plus at most ``extra`` appended log entries."""
        n = len(before.log)
        return (
            self.world == before.world
            and self.effects == before.effects
            and self.log[:n] == before.log
            and 0 <= len(self.log) - n <= extra
        )


Probe = Callable[[], None]
"""Called by a target inside scoring, after its oracle has touched state; may raise."""


@runtime_checkable
class AuditTarget(Protocol):
    """An oracle under audit, reached through four operations.

    A target object may live across many episodes (``reset`` starts the next one); the
    audit creates fresh objects through a :data:`TargetFactory` whenever a check needs a
    fresh target.
    """

    @property
    def name(self) -> str:
        """A short identifier for reports."""
        ...

    def tasks(self) -> Sequence[str]:
        """The task ids, in a stable order."""
        ...

    def reference(self, task: str) -> Sequence[Action]:
        """The task's reference trajectory: the actions a correct agent takes."""
        ...

    def closing_action(self, task: str) -> Action | None:
        """The action that ends the session (it may score internally), or None."""
        ...

    def reset(self, task: str) -> None:
        """Start an episode of ``task`` on a fresh world."""
        ...

    def apply(self, action: Action) -> None:
        """Apply one action. Domain errors are recorded by the target, not raised."""
        ...

    def score(self) -> ScoreResult:
        """The oracle's verdict on the episode so far."""
        ...

    def read_state(self) -> StateDigest:
        """A digest of the world and the action log."""
        ...

    def arm_fault(self, probe: Probe) -> None:
        """Arrange for the next ``score()`` to call ``probe`` once, at the point where the
        oracle has touched state (or at its first step if it never does)."""
        ...


TargetFactory = Callable[[], AuditTarget]
"""Makes a fresh target; each call must return a new, independent object."""
