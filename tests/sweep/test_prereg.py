"""Pre-registration: the experiment config and analysis plan are registered before the first
episode; a later change stops the job unless a reason is given, and is then logged
(append-only); `cavbench deviation` records a plan edit; `analyze` prints it all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from cavbench.cli import main
from cavbench.errors import ConfigError
from cavbench.study import (
    DEVIATIONS_NAME,
    PACKS_NAME,
    PREREG_NAME,
    DeviationKind,
    config_hash,
    describe,
    job_config,
    read_preregistration,
    run_cell,
)
from cavbench.study import _job as job_module

from .conftest import run_sweep

CRASHING = [
    "adapter.name=crashing",
    "adapter.factory._target_=tests.sweep.adapters.crashing",
]


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.md"
    path.write_text("# Plan\nH1: CVSR rises under full_lifecycle.\n", encoding="utf-8")
    return path


def _sweep(tmp_path: Path) -> Path:
    return tmp_path / "sweeps" / "default"


def _lines(tmp_path: Path) -> list[dict[str, Any]]:
    log = _sweep(tmp_path) / DEVIATIONS_NAME
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_registered_before_the_first_episode(
    config: Callable[..., DictConfig],
    plan: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    real = job_module.run_episode

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append((_sweep(tmp_path) / PREREG_NAME).is_file())
        return real(*args, **kwargs)

    monkeypatch.setattr(job_module, "run_episode", spy)
    run_cell(config(f"prereg.analysis_plan={plan}"))
    assert seen
    assert all(seen)
    state = read_preregistration(_sweep(tmp_path))
    assert state is not None
    registration = state.registration
    assert registration.plan is not None
    assert registration.plan.text == plan.read_text(encoding="utf-8")
    assert registration.plan.sha256.startswith("sha256:")
    assert registration.experiment_source == "job"
    assert registration.experiment_hash.startswith("sha256:")
    assert state.deviations == ()


def test_cells_of_one_design_and_a_resume_record_nothing(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    for profile in ("direct", "reconciled", "direct"):
        run_cell(config(f"prereg.analysis_plan={plan}", f"profile={profile}"))
    run_cell(config(f"prereg.analysis_plan={plan}", "scoring=v1_strict", "seeds.count=2"))
    assert _lines(tmp_path) == []


def test_concurrency_is_not_part_of_the_registered_design(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    run_cell(config(f"prereg.analysis_plan={plan}"))
    run_cell(
        config(f"prereg.analysis_plan={plan}", "adapter.max_concurrency=4", "output.overwrite=true")
    )
    assert _lines(tmp_path) == []  # neither an experiment- nor a cell-config deviation


def test_an_edited_plan_needs_a_reason_and_is_logged_once(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    run_cell(config(f"prereg.analysis_plan={plan}"))
    plan.write_text("# Plan\nH1: changed after seeing data.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="analysis plan changed since it was pre-registered"):
        run_cell(config(f"prereg.analysis_plan={plan}", "profile=direct"))
    reason = "prereg.deviation=H1 reworded for clarity"
    run_cell(config(f"prereg.analysis_plan={plan}", "profile=direct", reason))
    run_cell(config(f"prereg.analysis_plan={plan}", "profile=reconciled", reason))
    lines = _lines(tmp_path)
    assert len(lines) == 1
    assert lines[0]["kind"] == DeviationKind.ANALYSIS_PLAN
    assert lines[0]["reason"] == "H1 reworded for clarity"
    assert lines[0]["seq"] == 1
    state = read_preregistration(_sweep(tmp_path))
    assert state is not None
    assert state.registration.plan is not None
    assert lines[0]["registered_hash"] == state.registration.plan.sha256
    # The registration itself is never rewritten.
    assert "H1: CVSR rises" in state.registration.plan.text


def test_a_changed_experiment_config_and_a_redone_cell_are_deviations(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    first = [f"prereg.analysis_plan={plan}", *CRASHING, "+adapter.factory.crash_on=[MK-02]"]
    run_cell(config(*first))
    changed = [f"prereg.analysis_plan={plan}", *CRASHING, "+adapter.factory.crash_on=[MK-03]"]
    with pytest.raises(ConfigError, match="experiment config changed"):
        run_cell(config(*changed))
    assert not (_sweep(tmp_path) / DEVIATIONS_NAME).exists()
    run_cell(config(*changed, "output.overwrite=true", "prereg.deviation=crash list fixed"))
    kinds = [line["kind"] for line in _lines(tmp_path)]
    assert kinds == [DeviationKind.EXPERIMENT_CONFIG, DeviationKind.CELL_CONFIG]
    assert [line["seq"] for line in _lines(tmp_path)] == [1, 2]


def test_a_sweep_without_a_plan_is_not_registered(
    config: Callable[..., DictConfig], tmp_path: Path
) -> None:
    run_cell(config())
    assert read_preregistration(_sweep(tmp_path)) is None
    assert not (_sweep(tmp_path) / ".preregistration.lock").exists()


def test_missing_plan_file_names_the_key(config: Callable[..., DictConfig], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"prereg.analysis_plan=.*no such file"):
        run_cell(config(f"prereg.analysis_plan={tmp_path / 'nope.md'}"))


def test_prereg_is_not_part_of_a_cells_identity(
    config: Callable[..., DictConfig], plan: Path
) -> None:
    plain = config()
    registered = config(f"prereg.analysis_plan={plan}", "prereg.deviation=x")
    assert config_hash(job_config(plain)) == config_hash(job_config(registered))


def test_deviation_command_and_analyze_print_the_registration(
    config: Callable[..., DictConfig],
    plan: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for profile in ("direct", "full_lifecycle"):
        run_cell(config(f"prereg.analysis_plan={plan}", f"profile={profile}"))
    sweep = _sweep(tmp_path)
    assert main(["deviation", str(sweep), "--reason", "nothing changed"]) == 1
    assert "unchanged" in capsys.readouterr().err
    plan.write_text("# Plan\nH1 and H2.\n", encoding="utf-8")
    edited = read_preregistration(sweep)
    assert edited is not None
    assert "changed since it was registered and no deviation records it" in describe(edited)[-1]
    out = tmp_path / "analysis"
    analyze = ["analyze", str(sweep), "--out", str(out), "--resamples", "200"]
    analyze += ["--permutation-resamples", "99", "--figure-formats", "svg"]
    assert main(["deviation", str(sweep), "--reason", "added H2 before analysis"]) == 0
    assert "recorded deviation #1" in capsys.readouterr().out
    assert main(analyze) == 0
    text = capsys.readouterr().out
    state = read_preregistration(sweep)
    assert state is not None
    assert state.registration.plan is not None
    assert f"pre-registered: analysis plan {state.registration.plan.sha256}" in text
    assert "deviations: 1" in text
    assert "#1 analysis_plan: added H2 before analysis" in text
    assert "warning" not in text


def test_deviation_and_confirmatory_need_a_registration(
    config: Callable[..., DictConfig], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_cell(config())
    sweep = _sweep(tmp_path)
    assert main(["deviation", str(sweep), "--reason", "x"]) == 1
    assert "not pre-registered" in capsys.readouterr().err
    args = ["analyze", str(sweep), "--out", str(tmp_path / "a"), "--confirmatory"]
    assert main([*args, "--factor", "profile", "--baseline", "direct"]) == 1
    assert "was not pre-registered" in capsys.readouterr().err


@pytest.mark.slow
def test_a_multirun_registers_its_sweep_lists(tmp_path: Path, plan: Path) -> None:
    base = [
        "-m",
        "experiment=smoke",
        f"output.root={tmp_path / 's'}",
        f"prereg.analysis_plan={plan}",
    ]
    first = run_sweep(base, tmp_path)
    assert first.returncode == 0, first.stderr
    sweep = tmp_path / "s" / "smoke"
    state = read_preregistration(sweep)
    assert state is not None
    assert state.registration.experiment_source == "multirun"
    assert run_sweep(base, tmp_path).returncode == 0  # a resume is not a deviation
    widened = run_sweep([*base, "seeds.count=1,2"], tmp_path)
    assert widened.returncode != 0
    assert "experiment config changed" in widened.stderr
    explained = run_sweep(
        [*base, "seeds.count=1,2", "prereg.deviation=second seed added"], tmp_path
    )
    assert explained.returncode == 0, explained.stderr
    after = read_preregistration(sweep)
    assert after is not None
    assert [(d.kind, d.reason) for d in after.deviations] == [
        (DeviationKind.EXPERIMENT_CONFIG, "second seed added")
    ]


def test_a_damaged_registration_or_log_is_a_clear_error(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    run_cell(config(f"prereg.analysis_plan={plan}"))
    sweep = _sweep(tmp_path)
    (sweep / DEVIATIONS_NAME).write_text('{"seq": "one"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"deviations.jsonl: line 1 is not a deviation record"):
        read_preregistration(sweep)
    (sweep / PREREG_NAME).write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a readable pre-registration"):
        run_cell(config(f"prereg.analysis_plan={plan}", "profile=direct"))


def test_collect_copies_the_registration_beside_the_tables(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    run_cell(config(f"prereg.analysis_plan={plan}"))
    plan.write_text("edited", encoding="utf-8")
    run_cell(config(f"prereg.analysis_plan={plan}", "profile=direct", "prereg.deviation=typo"))
    frozen = tmp_path / "frozen"
    assert main(["collect", str(_sweep(tmp_path)), "--out", str(frozen)]) == 0
    for name in (PREREG_NAME, DEVIATIONS_NAME, PACKS_NAME):
        assert (frozen / name).read_bytes() == (_sweep(tmp_path) / name).read_bytes()
    state = read_preregistration(frozen)
    assert state is not None
    assert [d.reason for d in state.deviations] == ["typo"]


def test_an_edited_pack_is_a_deviation(
    config: Callable[..., DictConfig], plan: Path, tmp_path: Path
) -> None:
    import shutil

    from cavbench.scenarios import builtin_pack_root

    pack = tmp_path / "my-pack"
    shutil.copytree(builtin_pack_root() / "mock", pack)
    run_cell(config(f"prereg.analysis_plan={plan}", f"scenarios.pack={pack}"))
    state = read_preregistration(_sweep(tmp_path))
    assert state is not None
    assert [(p.pack_id, p.cell) for p in state.packs] == [
        ("mock", state.registration.registered_by)
    ]
    document = pack / "scenarios" / "MK-01.json"
    doc = json.loads(document.read_text(encoding="utf-8"))
    doc["title"] += " (edited)"
    document.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    edited = [f"prereg.analysis_plan={plan}", f"scenarios.pack={pack}", "profile=direct"]
    with pytest.raises(ConfigError, match="scenario pack 'mock' changed since the sweep first ran"):
        run_cell(config(*edited))
    run_cell(config(*edited, "prereg.deviation=title typo"))
    lines = _lines(tmp_path)
    assert [(line["kind"], line["reason"]) for line in lines] == [
        (DeviationKind.PACK_CONTENT, "title typo")
    ]
    run_cell(config(*edited[:2], "profile=reconciled", "prereg.deviation=title typo"))
    assert len(_lines(tmp_path)) == 1  # recorded once
