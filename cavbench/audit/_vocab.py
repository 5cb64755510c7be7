"""Closed vocabularies of the audit: checks, check outcomes, defect classes, variant kinds."""

from __future__ import annotations

from enum import StrEnum


class CheckId(StrEnum):
    """The eight checks, in report order: five invariants, then three known-answer controls."""

    INV_1 = "INV-1"
    INV_2 = "INV-2"
    INV_3 = "INV-3"
    INV_4 = "INV-4"
    INV_5 = "INV-5"
    CTL_1 = "CTL-1"
    CTL_2 = "CTL-2"
    CTL_3 = "CTL-3"

    @property
    def covers(self) -> str:
        return _COVERS[self]


_COVERS = {
    CheckId.INV_1: "mutation",
    CheckId.INV_2: "repeatability",
    CheckId.INV_3: "order dependence",
    CheckId.INV_4: "exception recovery",
    CheckId.INV_5: "session termination",
    CheckId.CTL_1: "verdict direction +",
    CheckId.CTL_2: "verdict direction -",
    CheckId.CTL_3: "near miss",
}


class CheckStatus(StrEnum):
    """A check's outcome. ``not_applicable`` is never a pass."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


class DefectClass(StrEnum):
    """The seven injected defect classes, one dimension each."""

    D1 = "D1"
    D2 = "D2"
    D3 = "D3"
    D4 = "D4"
    D5 = "D5"
    D6 = "D6"
    D7 = "D7"


class VariantKind(StrEnum):
    """What an oracle variant under audit is."""

    CORRECT = "correct"
    """The target's correct (or repaired) oracle: every check must pass."""
    NATIVE_DEFECT = "native_defect"
    """A defective oracle the target ships as written (e.g. the retail reset-without-restore)."""
    INJECTED = "injected"
    """The correct oracle with one defect variant wrapped around it."""
