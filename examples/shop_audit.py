"""Put a third-party benchmark's reward under cavbench's audit, defects injected and all.

`examples/shop_bench` stands in for someone else's benchmark (it imports nothing of
cavbench). This module wraps it with the public API of `cavbench.audit` only, in four parts
(walked through in docs/audit-your-benchmark.md):

1. `ShopWorld`: the benchmark's environment as a kit `World` (its state, its step, copies).
2. `ShopDomain`: tasks, gold actions as `Action`s, the closing tool, fresh worlds.
3. `RepairedShopOracle` / `DefectiveShopOracle`: thin shims that call the benchmark's own
   reward functions, unchanged, with what the kit hands them (`OracleEnv`).
4. `make_spec()`: a `TargetSpec` with the repaired reward as the correct oracle, the
   reward as first written as a shipped defect, and the kit's seven defect classes
   injected around the repaired one.

From the repository root:

    cavbench audit run --target examples.shop_audit:make_spec --out out/audit-shop

The repaired reward passes all eight checks; the reward as first written fails INV-1,
INV-2, INV-4 and INV-5 and passes INV-3 and the controls (its first verdict is right).
"""

from __future__ import annotations

import copy
import json

from cavbench.audit import (
    Action,
    ActionKind,
    Component,
    DefectClass,
    JSONObject,
    OracleEnv,
    OracleVariant,
    ScoreResult,
    StateDigest,
    TargetSpec,
    VariantKind,
    World,
    class_info,
    digest_of,
    kit_factory,
)
from examples.shop_bench import (
    CLOSE_TOOL,
    TASKS,
    TASKS_BY_ID,
    RewardInfo,
    ShopEnv,
    Task,
    calculate_reward,
    calculate_reward_repaired,
)


class ShopWorld(World):
    """The benchmark's `ShopEnv` as a kit world. Its log *is* the benchmark's `history`, so
    that whatever the reward (or an injected defect) appends there is seen; effects run
    through the benchmark's own tools."""

    def __init__(self, env: ShopEnv | None = None) -> None:
        super().__init__()
        self.env = env or ShopEnv()

    def apply_effect(self, action: Action) -> None:
        self.env.run_tool(action.name, copy.deepcopy(action.args))

    def append_log(self, action: Action) -> None:
        self.env.history.append({"tool": action.name, "args": dict(action.args)})
        self._log.append(action)  # the Action itself (its kind), for log()

    def log(self) -> tuple[Action, ...]:
        return tuple(self._log)

    def truncate_log(self, length: int) -> None:
        del self.env.history[length:]
        del self._log[length:]

    def state(self) -> JSONObject:
        copied: JSONObject = json.loads(json.dumps(self.env.data))
        return copied

    def peek(self) -> JSONObject:
        data: JSONObject = self.env.data
        return data  # no copy: the audit only digests it, an oracle reads view()

    def digest(self) -> StateDigest:
        # env.history, not the kit's list: the reward as first written logs its replay there.
        return StateDigest(
            world=digest_of(self.env.data),
            log=tuple(digest_of(step) for step in self.env.history),
        )

    def reset_world(self) -> None:
        self.env.data = ShopEnv().data

    def copy(self) -> ShopWorld:
        other = ShopWorld(copy.deepcopy(self.env))
        other._log = list(self._log)
        return other

    def load(self, other: World) -> None:
        assert isinstance(other, ShopWorld)
        self.env = copy.deepcopy(other.env)
        self._log = list(other._log)

    def from_state(self, state: JSONObject) -> ShopWorld:
        # Lets the kit show the reward the agent's world in another representation (D6)
        # as a ShopWorld, not as a private wrapper the reward cannot use.
        other = self.copy()
        other.env.data = state
        return other


def _env(world: World) -> ShopEnv:
    assert isinstance(world, ShopWorld), "the kit handed the reward a world it cannot use"
    return world.env


class ShopDomain:
    """The benchmark's tasks as audit tasks."""

    name = "shop"
    primary_component = "db"

    def tasks(self) -> tuple[str, ...]:
        return tuple(t.task_id for t in TASKS)

    def reference(self, task: str) -> tuple[Action, ...]:
        return tuple(Action(tool, dict(args)) for tool, args in TASKS_BY_ID[task].actions)

    def closing_action(self, task: str) -> Action | None:
        return Action(CLOSE_TOOL, {}, ActionKind.CLOSE)

    def new_world(self, task: str) -> ShopWorld:
        return ShopWorld()


def _task(env: OracleEnv) -> Task:
    # The contract: the task comes from env.task (D3 hands the reward another task's id),
    # never from something the shim remembered.
    return TASKS_BY_ID[env.task]


def _verdict(info: RewardInfo) -> ScoreResult:
    return ScoreResult(
        info.reward == 1.0,
        (Component("db", info.db_match), Component("outputs", info.outputs_ok)),
    )


class RepairedShopOracle:
    """`calculate_reward_repaired`, unchanged: the agent's world is env.live, new
    environments come from env.fresh(), the INV-4 hook is env.probe."""

    name = "repaired"

    def score(self, env: OracleEnv) -> ScoreResult:
        info = calculate_reward_repaired(
            _env(env.live), _task(env), new_env=lambda: _env(env.fresh()), hook=env.probe
        )
        return _verdict(info)


class DefectiveShopOracle:
    """`calculate_reward` as first written: it replays the gold actions in env.live."""

    name = "defective"

    def score(self, env: OracleEnv) -> ScoreResult:
        return _verdict(calculate_reward(_env(env.live), _task(env), hook=env.probe))


def make_spec(*, shared_starts: bool = False) -> TargetSpec:
    """The shop benchmark as an audit target (what `--target` names). `shared_starts`
    builds each task's starting world once and copies it per reset (worth it when loading
    the benchmark's data costs more than `ShopWorld.copy`)."""
    domain = ShopDomain()
    return TargetSpec(
        name="shop",
        description="examples/shop_bench: gold-replay reward over a small shop (6 tasks)",
        correct=kit_factory(
            domain, RepairedShopOracle, name="shop/repaired", shared_starts=shared_starts
        ),
        natives=(
            OracleVariant(
                "defective",
                VariantKind.NATIVE_DEFECT,
                DefectClass.D1,
                "the reward as first written: reload the live data, replay, never restore",
                kit_factory(
                    domain,
                    DefectiveShopOracle,
                    name="shop/defective",
                    shared_starts=shared_starts,
                ),
                class_info(DefectClass.D1).expected,
            ),
        ),
        domain=domain,
        oracle_factory=RepairedShopOracle,
        shared_starts=shared_starts,
    )
