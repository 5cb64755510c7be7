"""Auditing a third-party benchmark: the shop example, the injection contract's warnings,
applicability apart from detection, the closing turn executed, and `audit record`'s choices."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cavbench.audit import (
    DEFECT_VARIANTS,
    Action,
    ActionKind,
    CheckId,
    CheckStatus,
    JSONObject,
    OracleEnv,
    ScoreResult,
    TargetAudit,
    TargetSpec,
    World,
    audit_target,
    kit_factory,
    plan_audit,
    select_variants,
)
from cavbench.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shop() -> ModuleType:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("examples.shop_audit")


@pytest.fixture(scope="module")
def shop_audit(shop: ModuleType) -> TargetAudit:
    return audit_target(shop.make_spec(), DEFECT_VARIANTS)


def test_the_repaired_reward_passes_and_the_first_one_fails_as_the_study_says(
    shop_audit: TargetAudit,
) -> None:
    assert [r.status for r in shop_audit.correct.results] == [CheckStatus.PASS] * 8
    defective = next(v for v in shop_audit.variants if v.variant_id == "defective")
    assert defective.failed == (CheckId.INV_1, CheckId.INV_2, CheckId.INV_4, CheckId.INV_5)
    classes = shop_audit.classes()
    assert (sum(bool(s.detected) for s in classes), len(classes)) == (7, 7)
    injected = [v for v in shop_audit.variants if v.defect_class and v.variant_id != "defective"]
    assert (sum(v.detected for v in injected), len(injected)) == (23, 24)
    assert [v.variant_id for v in injected if not v.detected] == ["D5d"]
    assert shop_audit.problems() == ()


def _cavbench_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {m for m in found if m.startswith("cavbench")}


def test_the_example_uses_only_the_public_api() -> None:
    assert _cavbench_imports(ROOT / "examples" / "shop_audit.py") == {"cavbench.audit"}
    assert _cavbench_imports(ROOT / "examples" / "shop_bench" / "__init__.py") == set()


# -- item 6: the closing turn runs through the target's own step ------------------------
def test_the_closing_tool_changes_state_and_the_correct_oracle_still_passes_inv5(
    shop: ModuleType,
) -> None:
    target = shop.make_spec().correct()
    target.reset("shop-1")
    target.apply(Action("close_ticket", {}, ActionKind.CLOSE))
    assert target._world.env.data["tickets"]["t-1"] == {"status": "closed"}
    assert target.session_result is not None
    assert not target.session_result.passed
    plan = plan_audit(shop.make_spec().correct, ["shop-1", "shop-2"])
    closed = plan.task("shop-1").closed
    assert len(closed) == 3
    assert all(c.added == 1 for c in closed)
    inv5 = next(r for r in shop_audit_results(shop) if r.check is CheckId.INV_5)
    assert inv5.status is CheckStatus.PASS
    assert inv5.runs == 6


def shop_audit_results(shop: ModuleType):  # type: ignore[no-untyped-def]
    spec = shop.make_spec()
    return audit_target(spec, (), tasks=["shop-1", "shop-2"]).correct.results


# -- item 5: could not be checked is not "not detected" ---------------------------------
def test_a_class_whose_detectors_cannot_apply_is_reported_as_not_checked(
    shop: ModuleType,
) -> None:
    audit = audit_target(shop.make_spec(), select_variants("D7"), tasks=["shop-1", "shop-3"])
    ctl3 = audit.usable(CheckId.CTL_3)
    assert (ctl3.status, ctl3.usable, ctl3.universe) == (CheckStatus.NOT_APPLICABLE, 0, 2)
    assert audit.problems() == ()
    (unchecked,) = audit.unchecked()
    assert "D7 (any-change-passes) could not be checked" in unchecked
    assert "CTL-3 usable on 0/2 tasks" in unchecked
    assert not any("D7" in f and "not detected" in f for f in audit.findings())


def test_cli_says_not_checked_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    target = "examples.shop_audit:make_spec"
    args = ["audit", "run", "--target", target, "--tasks", "shop-1,shop-3", "--defects", "D7"]
    assert main([*args, "--out", str(tmp_path), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "NOT CHECKED: shop: defect class D7" in out
    assert "checks usable on: CTL-2 2/2 tasks" not in out  # only counts below the total show
    assert "CTL-3 0/2 tasks" in out
    assert "audit PASS: 1 target(s)" in out
    assert "(1 could not be checked)" in out


# -- item 3: the injection contract, checked ------------------------------------------
def _miswired(shop: ModuleType) -> TargetSpec:
    class PinnedWorld(shop.ShopWorld):  # type: ignore[name-defined,misc]
        """Remembers its task (the miswiring below reads it) and cannot be rebuilt."""

        task = ""

        def from_state(self, state: JSONObject) -> World | None:
            return None

    class Domain(shop.ShopDomain):  # type: ignore[name-defined,misc]
        def new_world(self, task: str) -> World:
            world = PinnedWorld()
            world.task = task
            return world

    class Miswired:
        """Reads its task from the world, not env.task; reaches into env.live.env."""

        name = "miswired"

        def score(self, env: OracleEnv) -> ScoreResult:
            task = shop.TASKS_BY_ID[env.live.task]
            info = shop.calculate_reward_repaired(
                env.live.env, task, new_env=lambda: env.fresh().env, hook=env.probe
            )
            return shop._verdict(info)

    domain = Domain()
    return TargetSpec(
        "miswired",
        "test",
        kit_factory(domain, Miswired),
        domain=domain,
        oracle_factory=Miswired,
    )


def test_contract_warnings_name_the_equivalent_and_the_kit_made_detections(
    shop: ModuleType,
) -> None:
    audit = audit_target(_miswired(shop), select_variants("D3a,D6a"))
    warnings = audit.contract_warnings()
    d3 = next(w for w in warnings if "D3a" in w)
    assert "behaves exactly like the correct oracle" in d3
    assert "take its task from env.task" in d3
    d6 = next(w for w in warnings if "D6a" in w)
    assert "detected only because scoring raised an exception of the kit's own making" in d6
    assert "AttributeError" in d6
    assert "_Presented" in d6
    # Wired by the contract (the example), neither warning appears.
    assert audit_target(shop.make_spec(), select_variants("D3a,D6a")).contract_warnings() == ()


# -- item 7: audit record chooses its agents and has no `defective` default -------------
def test_record_defaults_to_the_correct_oracle_and_takes_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    args = ["audit", "record", "--target", "examples.shop_audit:make_spec", "--out", str(tmp_path)]
    assert main([*args, "--agents", "do_nothing,correct", "--repetitions", "1"]) == 0
    assert "wrote 12 records (correct oracle)" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["agents"] == ["do_nothing", "correct"]
    assert manifest["oracle_at_recording"] == "correct"
    assert main([*args, "--agents", "lazy"]) == 1
    assert "--agents 'lazy': unknown ['lazy']" in capsys.readouterr().err


# -- item 4: the INV-4 hook in an oracle that calls a database ---------------------------
def test_the_database_grader_needs_finally_to_pass_inv4() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sqlite = importlib.import_module("examples.sqlite_audit")
    safe = audit_target(TargetSpec("sqlite", "", sqlite.make_target), ())
    assert [r.status for r in safe.correct.results] == [CheckStatus.PASS] * 8
    unsafe = audit_target(TargetSpec("sqlite-unsafe", "", sqlite.make_unsafe_target), ())
    inv4 = unsafe.usable(CheckId.INV_4)
    assert (inv4.status, inv4.failed_runs, inv4.runs) == (CheckStatus.FAIL, 6, 9)
    assert unsafe.correct.failed == (CheckId.INV_4,)


def test_shared_starts_build_each_start_once_and_change_no_result(
    shop: ModuleType, shop_audit: TargetAudit, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    original = shop.ShopDomain.new_world

    def counting(self, task: str):  # type: ignore[no-untyped-def]
        built.append(task)
        return original(self, task)

    monkeypatch.setattr(shop.ShopDomain, "new_world", counting)
    shared = audit_target(shop.make_spec(shared_starts=True), DEFECT_VARIANTS)
    assert [v.results for v in shared.variants] == [v.results for v in shop_audit.variants]
    shared_builds = len(built)
    built.clear()
    audit_target(shop.make_spec(), DEFECT_VARIANTS)
    assert shared_builds * 20 < len(built)


def test_replay_correction_on_the_shop_reproduces_the_mechanism(shop: ModuleType) -> None:
    from cavbench.audit import Agent, record_episodes, replay_records

    spec = shop.make_spec()
    defective = spec.natives[0].factory
    records = record_episodes(defective, target="shop", repetitions=3)
    episodes = replay_records(records, spec.correct)
    assert (sum(e.before.passed for e in episodes), len(episodes)) == (54, 54)
    assert sum(e.after.passed for e in episodes) == 18
    nothing = [e for e in episodes if e.agent is Agent.DO_NOTHING]
    assert (sum(e.before.passed for e in nothing), sum(e.after.passed for e in nothing)) == (18, 0)


def test_inv5_allows_the_closing_turns_own_effect_and_nothing_else() -> None:
    from cavbench.audit import StateDigest
    from cavbench.audit._checks import ClosedState

    before = StateDigest("w0", ("a", "b"))
    closed = ClosedState("w1", None, 1, ("a", "b", "close-as-tool"))
    assert closed.matches(before, StateDigest("w1", ("a", "b", "close")))
    assert not closed.matches(before, StateDigest("w0", ("a", "b", "close")))  # effect missing
    assert not closed.matches(before, StateDigest("w1", ("a", "b", "close", "gold")))
    # an event the closing tool records lands before the action entries: one entry differs
    evented = ClosedState("w1", None, 2, ("a", "ev", "b", "close-as-tool"))
    assert evented.matches(before, StateDigest("w1", ("a", "ev", "b", "close")))
    assert not evented.matches(before, StateDigest("w1", ("x", "ev", "b", "close")))
