"""`cavbench audit …` end to end on small selections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cavbench.audit._tables import AuditTable, read_rows
from cavbench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_audit_list_names_targets_checks_and_variants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "list", "--quick"]) == 0
    out = capsys.readouterr().out
    for word in ("retail", "network", "v1/core-v1", "v1/mock", "INV-4", "CTL-3", "D5d", "D7c"):
        assert word in out


def test_audit_run_writes_declared_tables_report_and_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["audit", "run", "--target", "network", "--max-tasks", "6", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "network: 6 tasks; correct oracle 8/8 checks pass; classes detected 7/7" in out
    checks = read_rows(tmp_path / "audit_checks.parquet", AuditTable.AUDIT_CHECKS)
    assert len(checks) == (1 + 24) * 8
    classes = read_rows(tmp_path / "audit_classes.parquet", AuditTable.AUDIT_CLASSES)
    assert [r["defect_class"] for r in classes] == [f"D{i}" for i in range(1, 8)]
    bearing = read_rows(tmp_path / "audit_load_bearing.parquet", AuditTable.AUDIT_LOAD_BEARING)
    assert sorted({r["check"] for r in bearing if r["level"] == "class"}) == [
        "CTL-1",
        "CTL-3",
        "INV-3",
        "INV-4",
    ]
    report = (tmp_path / "audit_report.md").read_text()
    assert "Class-level detection" in report
    assert "Variant-level detection" in report
    assert (tmp_path / "audit_heatmap.png").read_bytes()[:4] == b"\x89PNG"
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert set(manifest["files"]) >= {"audit_checks.parquet", "audit_report.md"}


def test_audit_run_gate_fails_on_a_buggy_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code = main(
        [
            "audit",
            "run",
            "--target",
            "examples.calendar_audit:make_buggy_target",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 2
    assert (
        "AUDIT FAILED: calendar-buggy: the oracle under audit fails INV-3"
        in capsys.readouterr().out
    )


def test_audit_run_with_one_class_gates_on_nothing_else(tmp_path: Path) -> None:
    assert (
        main(["audit", "run", "--target", "v1/mock", "--defects", "D4", "--out", str(tmp_path)])
        == 0
    )
    rows = read_rows(tmp_path / "audit_detection.parquet", AuditTable.AUDIT_DETECTION)
    assert [r["variant_id"] for r in rows] == ["correct", "D4a", "D4b", "D4c"]
    assert all(r["detectors"] == ["INV-4"] for r in rows[1:])


def test_audit_replay_reproduces_the_correction_from_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = ROOT / "artifacts" / "audit" / "retail-records"
    code = main(
        [
            "audit",
            "replay",
            str(records),
            "--target",
            "retail",
            "--out",
            str(tmp_path),
            "--resamples",
            "200",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "do_nothing success        before 105/105 (100.0%) after 0/105 (0.0%)" in out
    summary = read_rows(tmp_path / "correction_summary.parquet", AuditTable.CORRECTION_SUMMARY)
    overall = next(r for r in summary if r["agent"] == "all" and r["measure"] == "success")
    assert (overall["passed_before"], overall["passed_after"]) == (315, 138)
    episodes = read_rows(tmp_path / "correction_episodes.parquet", AuditTable.CORRECTION_EPISODES)
    assert len(episodes) == 315


def test_bad_input_exits_1_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "run", "--target", "nope", "--out", str(tmp_path)]) == 1
    assert "no such shipped target" in capsys.readouterr().err
    assert (
        main(["audit", "run", "--target", "retail", "--tasks", "zzz", "--out", str(tmp_path)]) == 1
    )
    assert "no selected target holds ['zzz']" in capsys.readouterr().err
    records = ROOT / "artifacts" / "audit" / "retail-records"
    assert (
        main(["audit", "replay", str(records), "--target", "network", "--out", str(tmp_path)]) == 1
    )
    assert "records are for target(s) ['retail']" in capsys.readouterr().err


@pytest.mark.slow
def test_full_matrix_on_every_shipped_target(tmp_path: Path) -> None:
    assert main(["audit", "run", "--out", str(tmp_path)]) == 0
    classes = read_rows(tmp_path / "audit_classes.parquet", AuditTable.AUDIT_CLASSES)
    assert len(classes) == 4 * 7
    assert all(r["detected"] > 0 for r in classes)


def test_audit_sensitivity_writes_its_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "sensitivity", "--out", str(tmp_path)]) == 0
    assert (
        "stale_commit               planted  11  caught v1  10  v1_strict  11"
        in capsys.readouterr().out
    )
    rows = read_rows(tmp_path / "sensitivity.parquet", AuditTable.SENSITIVITY)
    assert len(rows) == 40 * 6
    head = read_rows(tmp_path / "sensitivity_headline.parquet", AuditTable.SENSITIVITY_HEADLINE)
    assert len(head) == 10


def test_heatmap_bytes_are_deterministic(tmp_path: Path, network_audit) -> None:  # type: ignore[no-untyped-def]
    from cavbench.audit._report import write_heatmap

    first = write_heatmap([network_audit], tmp_path / "a.png").read_bytes()
    second = write_heatmap([network_audit], tmp_path / "b.png").read_bytes()
    assert first == second
