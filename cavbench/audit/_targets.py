"""The targets cavbench ships, and loading a user's target by import path.

A :class:`TargetSpec` names a target, gives the factory of its correct oracle, any defective
oracles it ships as written, and, when its oracle is built with the kit, the domain and
oracle factory that defect variants are injected into.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cavbench.audit._defects import DefectVariant, class_info, inject
from cavbench.audit._kit import Domain, OracleFactory, kit_factory
from cavbench.audit._protocol import AuditError, TargetFactory
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
                        ),
                        defect.expected,
                    )
                )
        return tuple(out)


def _retail() -> TargetSpec:
    from cavbench.audit._retail import DefectiveRetailOracle, RetailDomain, RetailOracle

    domain = RetailDomain()
    return TargetSpec(
        name="retail",
        description=(
            f"replay-style oracle over a small retail domain ({len(domain.tasks())} tasks); "
            "the repaired oracle replays the reference on a fresh world"
        ),
        correct=kit_factory(domain, lambda: RetailOracle(domain), name="retail/repaired"),
        natives=(
            OracleVariant(
                "defective",
                VariantKind.NATIVE_DEFECT,
                DefectClass.D1,
                "the shipped defective reward: reset the live world, replay, never restore",
                kit_factory(domain, lambda: DefectiveRetailOracle(domain), name="retail/defective"),
                class_info(DefectClass.D1).expected,
            ),
        ),
        domain=domain,
        oracle_factory=lambda: RetailOracle(domain),
    )


def _network() -> TargetSpec:
    from cavbench.audit._synthetic import NetworkDomain, NetworkOracle

    domain = NetworkDomain()
    return TargetSpec(
        name="network",
        description=(
            f"synthetic reservoir network ({len(domain.tasks())} tasks): goal ranges, a "
            "history-dependent safety component, per-task worlds, no reference replay"
        ),
        correct=kit_factory(domain, lambda: NetworkOracle(domain), name="network/goal"),
        domain=domain,
        oracle_factory=lambda: NetworkOracle(domain),
    )


def _v1(pack: str) -> Callable[[], TargetSpec]:
    def make() -> TargetSpec:
        from cavbench.audit._v1target import v1_target_spec

        return v1_target_spec(pack)

    return make


_SHIPPED: Final[dict[str, Callable[[], TargetSpec]]] = {
    "retail": _retail,
    "network": _network,
    "v1/core-v1": _v1("core-v1"),
    "v1/mock": _v1("mock"),
}


def shipped_target_names() -> tuple[str, ...]:
    return tuple(_SHIPPED)


def load_target(name: str) -> TargetSpec:
    """A shipped target by name, or ``package.module:attribute`` for your own.

    The attribute may be a :class:`TargetSpec`, a function returning one, or a target
    factory (a zero-argument callable returning a new target each call).
    """
    if name in _SHIPPED:
        return _SHIPPED[name]()
    if ":" not in name:
        raise AuditError(
            f"--target {name!r}: no such shipped target "
            f"(fix: one of {', '.join(_SHIPPED)}, or module:attribute for your own)"
        )
    module_name, _, attr = name.partition(":")
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # `module:attribute` resolves from the current folder too
        sys.path.append(cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AuditError(
            f"--target {name!r}: cannot import {module_name!r} ({exc}) "
            "(fix: run from the folder that holds it, or put it on PYTHONPATH)"
        ) from exc
    obj = getattr(module, attr, None)
    if obj is None:
        raise AuditError(f"--target {name!r}: {module_name} has no attribute {attr!r}")
    if isinstance(obj, TargetSpec):
        return obj
    if not callable(obj):
        raise AuditError(f"--target {name!r}: {attr} is neither a TargetSpec nor callable")
    made = obj()
    if isinstance(made, TargetSpec):
        return made
    target_name = getattr(made, "name", name)
    return TargetSpec(
        name=str(target_name),
        description=f"user target {name} (checks only; no injectable oracle)",
        correct=obj,
    )
