"""What the audit runs on: a target's correct oracle, its shipped defects and, when the oracle
is built with the kit, what defect variants are injected into.

Kept apart from the shipped targets (``cavbench.audit.targets``) and from loading by name
(``_load``), so that the machinery imports no target and no target imports the loader.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cavbench.audit._defects import DefectVariant, inject
from cavbench.audit._kit import Domain, OracleFactory, kit_factory
from cavbench.audit._protocol import TargetFactory
from cavbench.audit._vocab import CheckId, DefectClass, VariantKind

CORRECT_ID: Final = "correct"


@dataclass(frozen=True, slots=True)
class OracleVariant:
    """One oracle under audit on a target: the correct one, a shipped defect or an injection."""

    variant_id: str
    kind: VariantKind
    defect_class: DefectClass | None
    description: str
    factory: TargetFactory
    expected: tuple[CheckId, ...] = ()
    """Checks expected to fail (empty for the correct oracle)."""


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A target the audit can run: checks on every variant, defects where injectable."""

    name: str
    description: str
    correct: TargetFactory
    natives: tuple[OracleVariant, ...] = ()
    domain: Domain | None = None
    oracle_factory: OracleFactory | None = None
    shared_starts: bool = False
    """Injected variants share each task's starting world, copied per reset (see
    :class:`~cavbench.audit._kit.SharedStarts`); set it with ``kit_factory(...,
    shared_starts=True)`` for the correct oracle."""

    @property
    def injectable(self) -> bool:
        return self.domain is not None and self.oracle_factory is not None

    def variants(self, defects: Sequence[DefectVariant]) -> tuple[OracleVariant, ...]:
        """The correct oracle, the shipped defects, then one injection per defect variant."""
        out = [
            OracleVariant(CORRECT_ID, VariantKind.CORRECT, None, "the correct oracle", self.correct)
        ]
        out += self.natives
        if self.domain is not None and self.oracle_factory is not None:
            for defect in defects:
                out.append(
                    OracleVariant(
                        defect.variant_id,
                        VariantKind.INJECTED,
                        defect.defect_class,
                        defect.description,
                        kit_factory(
                            self.domain,
                            inject(defect, self.oracle_factory, self.domain),
                            name=f"{self.name}+{defect.variant_id}",
                            shared_starts=self.shared_starts,
                        ),
                        defect.expected,
                    )
                )
        return tuple(out)
