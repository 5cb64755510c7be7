"""A small kit for building targets whose oracle can take injected defects.

The protocol (``_protocol``) only sees four operations. To inject a defect *without editing
the oracle*, the oracle must be a separate object that the target calls, and it must reach
the world through an interface a wrapper can intercept. That is this kit:

- :class:`World` — the live world of one episode: state the oracle reads (``state()``), an
  action log, and the operations a defective oracle would misuse (reset in place,
  checkpoint/restore, copy).
- :class:`Oracle` — ``score(env) -> ScoreResult``; may keep per-instance state.
- :class:`OracleEnv` — what one ``score()`` call sees: the task, the live world, the
  reference trajectory, a fresh-world factory and the INV-4 probe.
- :class:`Domain` — tasks, references, the closing action and a world factory.
- :class:`KitTarget` — a :class:`~cavbench.audit._protocol.AuditTarget` built from a domain
  and an oracle.

Correct oracles treat ``env.live`` as read-only and do their scratch work on worlds from
``env.fresh()``; a defect wrapper (``_defects``) is whatever breaks that contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol, overload

from cavbench.audit._protocol import (
    JSON,
    Action,
    ActionKind,
    AuditError,
    JSONObject,
    Probe,
    ScoreResult,
    StateDigest,
    copy_object,
    digest_of,
    json_copy,
)


class Representation(StrEnum):
    """How a world's state may be presented to an oracle (D6 compares across these)."""

    NATIVE = "native"
    STRINGIFIED = "stringified"
    """Every scalar leaf as its ``str()``: ``3`` becomes ``"3"``."""
    REKEYED = "rekeyed"
    """Resource ids (the keys one level below a collection) with their letter case swapped."""


def represent(state: JSONObject, rep: Representation) -> JSONObject:
    """``state`` in representation ``rep`` (a new object; ``state`` is not changed)."""
    match rep:
        case Representation.NATIVE:
            return copy_object(state)
        case Representation.STRINGIFIED:
            out = _stringify(state)
            assert isinstance(out, dict)
            return out
        case Representation.REKEYED:
            return {
                ns: ({str(k).swapcase(): json_copy(v) for k, v in coll.items()})
                if isinstance(coll, dict)
                else json_copy(coll)
                for ns, coll in state.items()
            }


def _stringify(value: JSON) -> JSON:
    if isinstance(value, dict):
        return {k: _stringify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify(v) for v in value]
    return str(value)


class StateView(Mapping[str, object]):
    """A read-only view of a JSON object: nested objects are views, lists are
    :class:`ListView` objects. Nothing is copied; reading a multi-megabyte database through a
    view costs what the lookups cost. Compare views with ``==`` (against views or plain
    dicts) or by :meth:`digest`; :meth:`thaw` makes a mutable deep copy."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, JSON]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return frozen(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"StateView({self._data!r})"

    def digest(self) -> str:
        """:func:`~cavbench.audit.digest_of` of the underlying object."""
        return digest_of(self._data)

    def thaw(self) -> JSONObject:
        """A mutable deep copy (the only way to get something you may change)."""
        return copy_object(dict(self._data))


class ListView(Sequence[object]):
    """A read-only view of a JSON list (see :class:`StateView`)."""

    __slots__ = ("_data",)

    def __init__(self, data: Sequence[JSON]) -> None:
        self._data = data

    @overload
    def __getitem__(self, index: int) -> object: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[object]: ...
    def __getitem__(self, index: int | slice) -> object:
        if isinstance(index, slice):
            return ListView(self._data[index])
        return frozen(self._data[index])

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        raise TypeError("ListView is unhashable")

    def __repr__(self) -> str:
        return f"ListView({self._data!r})"


def frozen(value: JSON) -> object:
    """``value`` itself if it is a scalar, else a read-only view of it."""
    if isinstance(value, dict):
        return StateView(value)
    if isinstance(value, list):
        return ListView(value)
    return value


class World(ABC):
    """The live world of one episode: readable state plus an append-only action log.

    Subclasses implement the domain (``apply_effect``, ``state``, ``reset_world``,
    ``copy``, ``load``); the log and the digest are shared.
    """

    def __init__(self) -> None:
        self._log: list[Action] = []

    # -- domain hooks -----------------------------------------------------------------
    @abstractmethod
    def apply_effect(self, action: Action) -> None:
        """Change the world as ``action`` does (no logging). Invalid actions change nothing."""

    @abstractmethod
    def state(self) -> JSONObject:
        """A copy of the state an oracle reads."""

    @abstractmethod
    def reset_world(self) -> None:
        """Put the world back to the task's initial state, in place; the log is kept."""

    @abstractmethod
    def copy(self) -> World:
        """A detached copy (state and log)."""

    @abstractmethod
    def load(self, other: World) -> None:
        """Take over ``other``'s state and log, in place (``other`` came from ``copy``)."""

    # -- shared -----------------------------------------------------------------------
    def apply(self, action: Action) -> None:
        """Apply ``action`` and log it: what an agent's tool call does."""
        self.apply_effect(action)
        self.append_log(action)

    def append_log(self, action: Action) -> None:
        self._log.append(action)

    def log(self) -> tuple[Action, ...]:
        return tuple(self._log)

    def truncate_log(self, length: int) -> None:
        del self._log[length:]

    def checkpoint(self) -> World:
        return self.copy()

    def restore(self, checkpoint: World) -> None:
        self.load(checkpoint)

    def digest(self) -> StateDigest:
        return StateDigest(world=digest_of(self.peek()), log=tuple(a.digest for a in self.log()))

    def peek(self) -> JSONObject:
        """The live state object itself, not a copy, for digests and views; callers must not
        change it. The default copies through :meth:`state`; override it when your world
        keeps its state as a JSON object (return that object)."""
        return self.state()

    def view(self) -> StateView:
        """A read-only view of the state, without copying (what an oracle should read)."""
        return StateView(self.peek())

    def from_state(self, state: JSONObject) -> World | None:
        """A detached world of *this* class holding ``state`` (and this world's log), or
        None if the world cannot be rebuilt from a state. Optional: when given, the kit
        hands an oracle a world of its own class in another representation (D6) instead
        of a private wrapper, so an oracle that needs its own world type still runs."""
        return None

    def represent(self, rep: Representation) -> JSONObject:
        """The state in another representation; worlds may narrow what gets transformed."""
        return represent(self.peek(), rep)  # represent() builds a new object anyway

    def presented_as(self, rep: Representation) -> World:
        """This world seen through ``rep``: a world of the same class rebuilt from the
        transformed state when :meth:`from_state` allows, else a wrapper whose reads are
        transformed and whose writes pass through."""
        rebuilt = self.from_state(self.represent(rep))
        return _Presented(self, rep) if rebuilt is None else rebuilt


class _Presented(World):
    """A world whose ``state()`` is shown in another representation (used by D6)."""

    def __init__(self, inner: World, rep: Representation) -> None:
        super().__init__()
        self._inner = inner
        self._rep = rep

    def apply_effect(self, action: Action) -> None:
        self._inner.apply_effect(action)

    def append_log(self, action: Action) -> None:
        self._inner.append_log(action)

    def log(self) -> tuple[Action, ...]:
        return self._inner.log()

    def truncate_log(self, length: int) -> None:
        self._inner.truncate_log(length)

    def state(self) -> JSONObject:
        return self._inner.represent(self._rep)

    def reset_world(self) -> None:
        self._inner.reset_world()

    def copy(self) -> World:
        return _Presented(self._inner.copy(), self._rep)

    def load(self, other: World) -> None:
        self._inner.load(other._inner if isinstance(other, _Presented) else other)

    def peek(self) -> JSONObject:
        return self.state()


class Domain(Protocol):
    """A task domain: tasks, their references, the closing action and fresh worlds."""

    @property
    def name(self) -> str: ...

    @property
    def primary_component(self) -> str:
        """The component that carries the state comparison (saturated by D5's variant)."""
        ...

    def tasks(self) -> tuple[str, ...]: ...

    def reference(self, task: str) -> tuple[Action, ...]: ...

    def closing_action(self, task: str) -> Action | None: ...

    def new_world(self, task: str) -> World: ...


def _no_probe() -> None:
    return None


@dataclass(frozen=True, slots=True)
class OracleEnv:
    """What one ``score()`` call sees."""

    task: str
    live: World
    reference: tuple[Action, ...]
    fresh: Callable[[], World]
    probe: Probe
    episode: int
    """Counts ``reset`` calls on the target; a wrapper may key caches on it."""
    domain: Domain

    def retarget(self, task: str) -> OracleEnv:
        """The same live world, judged as if it were ``task`` (what a stale cache does)."""
        domain = self.domain
        return replace(
            self,
            task=task,
            reference=domain.reference(task),
            fresh=lambda: domain.new_world(task),
        )

    def with_live(self, live: World) -> OracleEnv:
        return replace(self, live=live)

    def without_probe(self) -> OracleEnv:
        return replace(self, probe=_no_probe)


class Oracle(Protocol):
    """Scores an episode. Correct oracles never change ``env.live``."""

    @property
    def name(self) -> str: ...

    def score(self, env: OracleEnv) -> ScoreResult: ...


OracleFactory = Callable[[], Oracle]


def replay(world: World, actions: Sequence[Action]) -> World:
    """Apply ``actions`` to ``world`` (logged), returning it."""
    for action in actions:
        world.apply(action)
    return world


class KitTarget:
    """An :class:`~cavbench.audit._protocol.AuditTarget` made of a domain and an oracle.

    The closing action is executed through the world's own step (so a closing tool that
    changes state is modelled) and then scored internally, as a benchmark that grades on
    session end does; the result is kept in ``session_result``.
    """

    def __init__(
        self,
        domain: Domain,
        oracle: Oracle,
        *,
        name: str | None = None,
        starts: Callable[[str], World] | None = None,
    ) -> None:
        self._domain = domain
        self._new_world = starts or domain.new_world
        self._oracle = oracle
        self._name = name or f"{domain.name}/{oracle.name}"
        self._tasks = domain.tasks()
        self._task: str | None = None
        self._world: World | None = None
        self._episode = 0
        self._armed: Probe | None = None
        self.session_result: ScoreResult | None = None

    @property
    def name(self) -> str:
        return self._name

    def tasks(self) -> Sequence[str]:
        return self._tasks

    def reference(self, task: str) -> Sequence[Action]:
        return self._domain.reference(task)

    def closing_action(self, task: str) -> Action | None:
        return self._domain.closing_action(task)

    def reset(self, task: str) -> None:
        if task not in self._tasks:
            raise AuditError(
                f"target {self._name}: no task {task!r} (fix: pick one of {list(self._tasks)[:5]}…)"
            )
        self._task = task
        self._world = self._new_world(task)
        self._episode += 1
        self.session_result = None

    def apply(self, action: Action) -> None:
        world = self._live()
        world.apply(action)  # the closing turn too: its tool may change state
        if action.kind is ActionKind.CLOSE:
            self.session_result = self.score()

    def score(self) -> ScoreResult:
        world = self._live()
        task = self._task
        assert task is not None
        probe, self._armed = (self._armed or _no_probe), None
        domain, new_world = self._domain, self._new_world
        env = OracleEnv(
            task=task,
            live=world,
            reference=domain.reference(task),
            fresh=lambda: new_world(task),
            probe=probe,
            episode=self._episode,
            domain=domain,
        )
        return self._oracle.score(env)

    def read_state(self) -> StateDigest:
        return self._live().digest()

    def arm_fault(self, probe: Probe) -> None:
        self._armed = probe

    def _live(self) -> World:
        if self._world is None:
            raise AuditError(f"target {self._name}: call reset(task) before using the target")
        return self._world


class SharedStarts:
    """Each task's starting world built once, handed out as copies (a shared reset).

    Worth it when ``World.copy()`` is cheaper than ``Domain.new_world`` (a database loaded
    from files, a long set-up); it requires ``copy()`` to be a faithful, detached copy."""

    def __init__(self, domain: Domain) -> None:
        self._domain = domain
        self._starts: dict[str, World] = {}

    def __call__(self, task: str) -> World:
        start = self._starts.get(task)
        if start is None:
            start = self._starts[task] = self._domain.new_world(task)
        return start.copy()


def kit_factory(
    domain: Domain,
    oracle_factory: OracleFactory,
    *,
    name: str | None = None,
    shared_starts: bool = False,
) -> Callable[[], KitTarget]:
    """A target factory: each call builds a new oracle (fresh per-instance state) over the
    shared, immutable ``domain``. With ``shared_starts``, the targets it makes share one
    :class:`SharedStarts` (every reset and fresh world is a copy of the task's start)."""
    starts = SharedStarts(domain) if shared_starts else None

    def make() -> KitTarget:
        return KitTarget(domain, oracle_factory(), name=name, starts=starts)

    return make
