"""Defect injection: every class caught by its expected detectors, golden counts."""

from __future__ import annotations

import pytest

from cavbench.audit import (
    DEFECT_CLASSES,
    DEFECT_VARIANTS,
    AuditError,
    CheckId,
    CheckStatus,
    DefectClass,
    TargetAudit,
    VariantKind,
    select_variants,
)

LOAD_BEARING = (CheckId.INV_3, CheckId.INV_4, CheckId.CTL_1, CheckId.CTL_3)


def test_registry_has_several_variants_per_class() -> None:
    assert {info.defect_class for info in DEFECT_CLASSES} == set(DefectClass)
    for cls in DefectClass:
        assert sum(v.defect_class is cls for v in DEFECT_VARIANTS) >= 3
    assert len({v.variant_id for v in DEFECT_VARIANTS}) == len(DEFECT_VARIANTS) == 24


def test_select_variants_parses_classes_and_variants() -> None:
    assert select_variants("all") == DEFECT_VARIANTS
    assert select_variants("none") == ()
    chosen = select_variants("D1, D3b")
    assert [v.variant_id for v in chosen] == ["D1a", "D1b", "D1c", "D1d", "D3b"]
    with pytest.raises(AuditError, match="no defect variant 'D9'"):
        select_variants("D9")


def test_every_class_is_detected_by_its_expected_detectors(any_audit: TargetAudit) -> None:
    classes = any_audit.classes()
    assert len(classes) == 7
    for summary in classes:
        assert summary.detected > 0, summary
        assert summary.missing_expected == (), summary


def test_load_bearing_checks_are_the_studys_four(any_audit: TargetAudit) -> None:
    assert any_audit.load_bearing() == LOAD_BEARING
    per_class = {s.defect_class: s.load_bearing for s in any_audit.classes()}
    assert per_class[DefectClass.D3] == (CheckId.INV_3,)
    assert per_class[DefectClass.D4] == (CheckId.INV_4,)
    assert per_class[DefectClass.D6] == (CheckId.CTL_1,)
    assert per_class[DefectClass.D7] == (CheckId.CTL_3,)


def test_saturation_that_swallows_the_fault_makes_inv4_not_applicable(
    any_audit: TargetAudit,
) -> None:
    d5 = next(s for s in any_audit.classes() if s.defect_class is DefectClass.D5)
    assert d5.inv4_not_applicable == ("D5a", "D5b", "D5d")


def test_pass_on_error_escapes_every_check(any_audit: TargetAudit) -> None:
    """D5d is a finding, not something to hide: an oracle that passes on error looks
    correct until an error happens, and INV-4 then does not apply."""
    d5d = next(v for v in any_audit.variants if v.variant_id == "D5d")
    assert not d5d.detected
    assert d5d.fingerprint != any_audit.correct.fingerprint
    assert any("D5d" in f for f in any_audit.findings())


def test_golden_detection_counts_network(network_audit: TargetAudit) -> None:
    rows = {
        s.defect_class.value: (
            s.variants,
            s.distinct,
            s.equivalent,
            s.detected,
            s.detected_distinct,
        )
        for s in network_audit.classes()
    }
    assert rows == {
        "D1": (4, 4, 0, 4, 4),
        "D2": (4, 3, 0, 4, 3),
        "D3": (3, 1, 0, 3, 1),
        "D4": (3, 3, 0, 3, 3),
        "D5": (4, 4, 0, 3, 3),
        "D6": (3, 2, 1, 2, 2),
        "D7": (3, 1, 0, 3, 1),
    }


def test_variant_matrix_network(network_audit: TargetAudit) -> None:
    failed = {
        v.variant_id: {c.value for c in v.failed}
        for v in network_audit.variants
        if v.kind is VariantKind.INJECTED
    }
    assert failed["D1a"] == {"INV-1", "INV-2", "INV-4", "INV-5"}
    assert failed["D1d"] == {"INV-1", "INV-2", "INV-5"}
    assert failed["D2b"] == {"INV-2"}
    assert failed["D2d"] == {"INV-3"}
    assert failed["D4b"] == {"INV-4"}
    assert failed["D5a"] == {"CTL-2", "CTL-3"}
    assert failed["D6c"] == set()  # equivalent here: the goal oracle builds no gold world
    assert failed["D7c"] == {"CTL-3"}


def test_each_variant_is_checked_with_all_eight_checks(any_audit: TargetAudit) -> None:
    for v in any_audit.variants:
        assert [r.check for r in v.results] == list(CheckId)
        assert all(r.status in CheckStatus for r in v.results)
