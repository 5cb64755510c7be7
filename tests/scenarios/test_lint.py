"""Semantic lint: schema-valid documents that would not run as their author meant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cavbench.cli import main
from cavbench.scenarios import LintCode, lint_scenario, load_pack


@pytest.mark.parametrize("pack", ["core-v1", "mock", "netops-v1"])
def test_shipped_packs_are_lint_clean(pack: str) -> None:
    assert [str(f) for s in load_pack(pack).scenarios for f in lint_scenario(s)] == []


def codes(kit: Any, **kwargs: Any) -> list[tuple[LintCode, str]]:
    return [(f.code, f.path) for f in lint_scenario(kit.scenario(**kwargs))]


def test_a_clean_document_has_no_findings(kit: Any) -> None:
    steps = [kit.read("r1", "order", "O-1"), kit.write("w1", "order", "O-1", {"status": "x"})]
    inj = [kit.mutation("f1", "after_read:order:O-1", "order", "O-1", {"status": "y"})]
    assert codes(kit, steps=steps, injections=inj) == []


def test_unknown_hook(kit: Any) -> None:
    inj = [kit.mutation("f1", "after_reading:order:O-1", "order", "O-1", {"a": 1})]
    assert codes(kit, injections=inj) == [(LintCode.UNKNOWN_HOOK, "$.world.injections[0].hook")]


def test_hook_with_the_wrong_number_of_parts(kit: Any) -> None:
    inj = [kit.mutation("f1", "before_commit:order:O-1", "order", "O-1", {"a": 1})]
    assert codes(kit, injections=inj) == [(LintCode.UNKNOWN_HOOK, "$.world.injections[0].hook")]


def test_step_hook_naming_no_step(kit: Any) -> None:
    inj = [kit.fault("f1", "before_commit_step:nope", "downstream_failure")]
    assert codes(kit, injections=inj) == [(LintCode.UNKNOWN_STEP, "$.world.injections[0].hook")]


def test_fault_on_a_missing_resource(kit: Any) -> None:
    inj = [kit.mutation("f1", "after_read:order:O-1", "order", "O-404", {"a": 1})]
    assert codes(kit, injections=inj) == [
        (LintCode.MISSING_RESOURCE, "$.world.injections[0].payload")
    ]


def test_step_on_a_missing_resource(kit: Any) -> None:
    steps = [kit.read("r1", "order", "O-404")]
    assert codes(kit, steps=steps) == [(LintCode.MISSING_RESOURCE, "$.plan.steps[0]")]


def test_write_without_logical_id(kit: Any) -> None:
    steps = [kit.write("w1", "order", "O-1", {"a": 1}, op=None)]
    assert codes(kit, steps=steps) == [(LintCode.WRITE_WITHOUT_LOGICAL_ID, "$.plan.steps[0]")]


def test_dangling_compensation_and_dependency(kit: Any) -> None:
    steps = [
        kit.write("w1", "order", "O-1", {"a": 1}, compensation_step_id="undo"),
        kit.write("w2", "order", "O-1", {"a": 2}, depends_on="w0"),
    ]
    assert codes(kit, steps=steps) == [
        (LintCode.UNKNOWN_STEP, "$.plan.steps[0].compensation_step_id"),
        (LintCode.UNKNOWN_STEP, "$.plan.steps[1].depends_on"),
    ]


def test_duplicate_step_ids(kit: Any) -> None:
    steps = [kit.read("r1", "order", "O-1"), kit.read("r1", "order", "O-1")]
    assert codes(kit, steps=steps) == [(LintCode.DUPLICATE_STEP_ID, "$.plan.steps")]


def test_ambiguous_response_where_it_has_no_effect(kit: Any) -> None:
    inj = [kit.fault("f1", "after_commit:update_record:order:O-1", "ambiguous_response")]
    assert codes(kit, injections=inj) == [
        (LintCode.INERT_AMBIGUOUS_RESPONSE, "$.world.injections[0].mode")
    ]


def test_validate_warns_and_strict_fails(
    kit: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    doc = kit.doc(
        injections=[kit.mutation("f1", "after_read:order:O-1", "order", "O-404", {"a": 1})]
    )
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "pack.json").write_text(json.dumps({"pack_id": "lint", "pack_version": "1"}))
    (tmp_path / "scenarios" / "T-01.json").write_text(json.dumps(doc))
    assert main(["validate", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        "WARN: T-01: at $.world.injections[0].payload: external_mutation targets order:O-404" in err
    )
    assert main(["validate", "--strict", str(tmp_path)]) == 1
    assert "1 semantic warning(s) and --strict" in capsys.readouterr().err
