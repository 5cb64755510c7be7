"""A synthetic domain unlike the other two targets: a reservoir network with a goal oracle.

Four tanks joined by valves; an agent opens valves, pumps water and closes them again.
Where the retail target shares one database and replays a reference to get one gold state,
here every task has its own starting world, the oracle never looks at the reference, many
terminal states pass (goals are ranges), and one verdict component is about the *history*
of the episode (nothing may have spilled on the way), not only its end.

Components: ``goal`` (level ranges and valve positions at the end) and ``safety`` (nothing
spilled, at most the allowed amount drained).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np

from cavbench.audit._kit import OracleEnv, World
from cavbench.audit._protocol import (
    JSON,
    Action,
    ActionKind,
    AuditError,
    Component,
    JSONObject,
    ScoreResult,
    copy_object,
)

GOAL_COMPONENT: Final = "goal"
SAFETY_COMPONENT: Final = "safety"
TANKS: Final = ("t1", "t2", "t3", "t4")
VALVES: Final[Mapping[str, tuple[str, str]]] = {
    "v12": ("t1", "t2"),
    "v23": ("t2", "t3"),
    "v34": ("t3", "t4"),
    "v14": ("t1", "t4"),
}
CAPACITY: Final = 100
TASK_COUNT: Final = 18
GENERATOR_SEED: Final = 20_240_611


def _obj(value: JSON) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _int(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _valve_between(valves: JSONObject, a: str, b: str) -> JSONObject | None:
    for valve in valves.values():
        v = _obj(valve)
        ends = v.get("between")
        if isinstance(ends, list) and sorted(str(e) for e in ends) == sorted((a, b)):
            return v
    return None


def apply_network_action(state: JSONObject, action: Action) -> None:
    """Apply one action to ``state`` in place; invalid actions change nothing."""
    tanks = _obj(state["tanks"])
    valves = _obj(state["valves"])
    args = action.args
    match action.name:
        case "open_valve" | "close_valve":
            valve = valves.get(str(args.get("valve")))
            if isinstance(valve, dict):
                valve["open"] = action.name == "open_valve"
        case "pump":
            src = tanks.get(str(args.get("src")))
            dst = tanks.get(str(args.get("dst")))
            units = _int(args.get("units"))
            link = _valve_between(valves, str(args.get("src")), str(args.get("dst")))
            if not (isinstance(src, dict) and isinstance(dst, dict) and units and units > 0):
                return
            if link is None or link.get("open") is not True:
                return
            src_level, dst_level = _int(src.get("level")) or 0, _int(dst.get("level")) or 0
            moved = min(units, src_level)
            src["level"] = src_level - moved
            room = CAPACITY - dst_level
            dst["level"] = min(CAPACITY, dst_level + moved)
            dst["peak"] = max(_int(dst.get("peak")) or 0, dst_level + moved)
            if moved > room:
                state["spilled"] = (_int(state.get("spilled")) or 0) + moved - room
        case "drain":
            tank = tanks.get(str(args.get("tank")))
            units = _int(args.get("units"))
            if isinstance(tank, dict) and units and units > 0:
                level = _int(tank.get("level")) or 0
                tank["level"] = level - min(units, level)
                state["drained"] = (_int(state.get("drained")) or 0) + min(units, level)
        case _:
            return


@dataclass(frozen=True, slots=True)
class Goal:
    """``tank``'s level must lie in ``[low, high]`` at the end."""

    tank: str
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class NetworkTask:
    task_id: str
    initial: JSONObject
    goals: tuple[Goal, ...]
    closed_valves: tuple[str, ...]
    """Valves that must be closed at the end."""
    drain_allowance: int
    actions: tuple[Action, ...]


def _generate() -> tuple[NetworkTask, ...]:
    rng = np.random.default_rng(GENERATOR_SEED)
    tasks: list[NetworkTask] = []
    for k in range(TASK_COUNT):
        levels = {t: int(rng.integers(20, 61)) for t in TANKS}
        initial: JSONObject = {
            "tanks": {t: {"level": levels[t], "peak": levels[t]} for t in TANKS},
            "valves": {v: {"between": list(ends), "open": False} for v, ends in VALVES.items()},
            "spilled": 0,
            "drained": 0,
        }
        current = dict(levels)
        actions: list[Action] = []
        used: list[str] = []
        n_transfers = 1 + k % 3
        for _ in range(n_transfers):
            valve = str(rng.choice([v for v in VALVES if v not in used]))
            used.append(valve)
            a, b = VALVES[valve]
            src, dst = (a, b) if current[a] >= current[b] else (b, a)
            high = min(current[src], CAPACITY - current[dst])
            units = int(rng.integers(min(5, high), high + 1))
            current[src] -= units
            current[dst] += units
            actions += [
                Action("open_valve", {"valve": valve}),
                Action("pump", {"src": src, "dst": dst, "units": units}),
                Action("close_valve", {"valve": valve}),
            ]
        changed = sorted(t for t in TANKS if current[t] != levels[t])
        goals = tuple(
            Goal(t, current[t], current[t] + 2)
            if current[t] > levels[t]
            else Goal(t, current[t] - 2, current[t])
            for t in changed
        )
        tasks.append(
            NetworkTask(
                task_id=f"net-{k + 1:02d}",
                initial=initial,
                goals=goals,
                closed_valves=tuple(sorted(used)),
                drain_allowance=int(k % 2) * 5,
                actions=tuple(actions),
            )
        )
    return tuple(tasks)


TASKS: Final[tuple[NetworkTask, ...]] = _generate()
_BY_ID: Final[Mapping[str, NetworkTask]] = {t.task_id: t for t in TASKS}
CLOSING_ACTION: Final = Action("hand_over", {"note": "shift ends"}, ActionKind.CLOSE)


class NetworkWorld(World):
    """The live network of one episode."""

    def __init__(self, initial: JSONObject) -> None:
        super().__init__()
        self._initial = initial
        self._state = copy_object(initial)

    def apply_effect(self, action: Action) -> None:
        apply_network_action(self._state, action)

    def state(self) -> JSONObject:
        return copy_object(self._state)

    def peek(self) -> JSONObject:
        return self._state

    def reset_world(self) -> None:
        self._state = copy_object(self._initial)

    def copy(self) -> NetworkWorld:
        other = NetworkWorld(self._initial)
        other._state = copy_object(self._state)
        other._log = list(self._log)
        return other

    def load(self, other: World) -> None:
        if not isinstance(other, NetworkWorld):
            raise AuditError("NetworkWorld.load: expected a NetworkWorld checkpoint")
        self._state = copy_object(other._state)
        self._log = list(other._log)


class NetworkDomain:
    """The reservoir-network domain: 18 generated tasks, each with its own starting world."""

    name = "network"
    primary_component = GOAL_COMPONENT

    def tasks(self) -> tuple[str, ...]:
        return tuple(_BY_ID)

    def spec(self, task: str) -> NetworkTask:
        try:
            return _BY_ID[task]
        except KeyError:
            raise AuditError(
                f"network: no task {task!r} (fix: see `cavbench audit list`)"
            ) from None

    def reference(self, task: str) -> tuple[Action, ...]:
        return self.spec(task).actions

    def closing_action(self, task: str) -> Action | None:
        return CLOSING_ACTION

    def new_world(self, task: str) -> NetworkWorld:
        return NetworkWorld(self.spec(task).initial)


class NetworkOracle:
    """The correct goal oracle: level ranges and closed valves at the end, nothing spilled."""

    name = "goal"

    def __init__(self, domain: NetworkDomain) -> None:
        self._domain = domain

    def score(self, env: OracleEnv) -> ScoreResult:
        task = self._domain.spec(env.task)
        env.probe()
        state = env.live.state()
        tanks, valves = _obj(state.get("tanks")), _obj(state.get("valves"))
        levels_ok = all(
            (level := _int(_obj(tanks.get(g.tank)).get("level"))) is not None
            and g.low <= level <= g.high
            for g in task.goals
        )
        closed_ok = all(_obj(valves.get(v)).get("open") is False for v in task.closed_valves)
        spilled, drained = _int(state.get("spilled")), _int(state.get("drained"))
        safe = spilled == 0 and drained is not None and drained <= task.drain_allowance
        comps = (
            Component(GOAL_COMPONENT, levels_ok and closed_ok),
            Component(SAFETY_COMPONENT, safe),
        )
        return ScoreResult(all(c.passed for c in comps), comps)
