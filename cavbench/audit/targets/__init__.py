"""The targets cavbench ships, by name: ``retail``, ``network``, ``v1/core-v1``, ``v1/mock``.

Each is built only from the public audit API (protocol, kit, :class:`TargetSpec`); modules are
imported when their target is asked for, so listing names costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from cavbench.audit._defects import class_info
from cavbench.audit._kit import kit_factory
from cavbench.audit._spec import OracleVariant, TargetSpec
from cavbench.audit._vocab import DefectClass, VariantKind


def _retail() -> TargetSpec:
    from cavbench.audit.targets.retail import DefectiveRetailOracle, RetailDomain, RetailOracle

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
    from cavbench.audit.targets.network import NetworkDomain, NetworkOracle

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
        from cavbench.audit.targets.v1 import v1_target_spec

        return v1_target_spec(pack)

    return make


SHIPPED: Final[dict[str, Callable[[], TargetSpec]]] = {
    "retail": _retail,
    "network": _network,
    "v1/core-v1": _v1("core-v1"),
    "v1/mock": _v1("mock"),
}


def shipped_target_names() -> tuple[str, ...]:
    return tuple(SHIPPED)
