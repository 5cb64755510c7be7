"""Run the audit matrix: target × oracle variant × check, then summarise detection.

Every variant runs all eight checks through a recording wrapper; the recording (every
verdict, raised error and state digest the checks observed) is the variant's behavioural
fingerprint. A variant whose fingerprint equals the correct oracle's is *equivalent* on
this target and task set (no check could tell it apart); variants that share a fingerprint
are one behaviour. Detection is reported over all variants and over distinct behaviours.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cavbench.audit._checks import AuditPlan, CheckResult, plan_audit, run_checks
from cavbench.audit._defects import DEFECT_CLASSES, DefectVariant, class_info
from cavbench.audit._protocol import (
    Action,
    AuditTarget,
    InjectedFault,
    Probe,
    ScoreResult,
    StateDigest,
    TargetFactory,
    digest_of,
)
from cavbench.audit._spec import OracleVariant, TargetSpec
from cavbench.audit._vocab import CheckId, CheckStatus, DefectClass, VariantKind

_AUDIT_DIR = Path(__file__).resolve().parent
_TARGETS_DIR = _AUDIT_DIR / "targets"


def kit_made(exc: BaseException) -> str | None:
    """Describe ``exc`` if the audit's own machinery made it (not the oracle's code): it
    was raised in the kit or a defect wrapper, or it is an attribute lookup that failed on
    one of the kit's private wrappers (an oracle reaching past the ``World`` interface).
    None for the INV-4 probe's fault and for anything raised in the oracle's own code."""
    if isinstance(exc, InjectedFault):
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    last = Path(frames[-1].filename).resolve() if frames else None
    obj = getattr(exc, "obj", None) if isinstance(exc, AttributeError) else None
    where = ""
    if obj is not None and type(obj).__module__.startswith("cavbench.audit._"):
        where = f"on the kit's {type(obj).__name__}"
    elif (
        last is not None
        and last.is_relative_to(_AUDIT_DIR)
        and not last.is_relative_to(_TARGETS_DIR)
    ):
        where = f"at {last.name}:{frames[-1].lineno}"
    return f"{type(exc).__name__}: {exc} ({where})" if where else None


class _Recording:
    """Delegates to a target and appends what the checks observe to a shared transcript;
    exceptions of the kit's own making are noted on the side."""

    def __init__(self, inner: AuditTarget, transcript: list[str], kit: set[str]) -> None:
        self._inner = inner
        self._t = transcript
        self._kit = kit

    @property
    def name(self) -> str:
        return self._inner.name

    def tasks(self) -> Sequence[str]:
        return self._inner.tasks()

    def reference(self, task: str) -> Sequence[Action]:
        return self._inner.reference(task)

    def closing_action(self, task: str) -> Action | None:
        return self._inner.closing_action(task)

    def reset(self, task: str) -> None:
        self._inner.reset(task)

    def apply(self, action: Action) -> None:
        self._inner.apply(action)

    def score(self) -> ScoreResult:
        try:
            result = self._inner.score()
        except Exception as exc:
            self._t.append(f"raise:{type(exc).__name__}")
            made = kit_made(exc)
            if made is not None:
                self._kit.add(made)
            raise
        self._t.append(f"score:{result.brief()}")
        return result

    def read_state(self) -> StateDigest:
        digest = self._inner.read_state()
        self._t.append(f"state:{digest.world}:{digest_of(list(digest.log))}")
        return digest

    def arm_fault(self, probe: Probe) -> None:
        self._inner.arm_fault(probe)


def _recorded(factory: TargetFactory, transcript: list[str], kit: set[str]) -> TargetFactory:
    def make() -> AuditTarget:
        return _Recording(factory(), transcript, kit)

    return make


@dataclass(frozen=True, slots=True)
class VariantAudit:
    """The eight check results of one oracle variant on one target."""

    target: str
    variant_id: str
    kind: VariantKind
    defect_class: DefectClass | None
    description: str
    expected: tuple[CheckId, ...]
    results: tuple[CheckResult, ...]
    fingerprint: str
    kit_exceptions: tuple[str, ...] = ()
    """Exceptions of the kit's own making raised inside scoring (see :func:`kit_made`)."""

    @property
    def failed(self) -> tuple[CheckId, ...]:
        return tuple(r.check for r in self.results if r.status is CheckStatus.FAIL)

    @property
    def detected_only_by_raise(self) -> bool:
        """Detected, but every failed run failed only because ``score()`` raised."""
        failing = [r for r in self.results if r.status is CheckStatus.FAIL]
        return bool(failing) and all(r.failed_runs == r.failed_by_raise for r in failing)

    @property
    def detected(self) -> bool:
        return bool(self.failed)

    def status(self, check: CheckId) -> CheckStatus:
        for r in self.results:
            if r.check is check:
                return r.status
        return CheckStatus.NOT_APPLICABLE

    @property
    def missing_expected(self) -> tuple[CheckId, ...]:
        return tuple(c for c in self.expected if c not in self.failed)


@dataclass(frozen=True, slots=True)
class ClassSummary:
    """Detection of one defect class on one target, with both denominators."""

    target: str
    defect_class: DefectClass
    slug: str
    variants: int
    distinct: int
    """Distinct behaviours among the variants, not counting those equivalent to correct."""
    equivalent: int
    """Variants whose behaviour equals the correct oracle's on this target."""
    detected: int
    detected_distinct: int
    detectors: tuple[CheckId, ...]
    """Checks that failed on at least one variant of the class."""
    expected: tuple[CheckId, ...]
    load_bearing: tuple[CheckId, ...]
    """The one check without which the class would go undetected (at most one)."""
    undetected_variants: tuple[str, ...]
    inv4_not_applicable: tuple[str, ...]
    """Variants on which INV-4 was not applicable (the fault was swallowed or never reached)."""
    checkable: bool = True
    """Some expected detector applied to some variant; when not, an undetected class
    *could not be checked* on this task set, which is not the same as *not detected*."""

    @property
    def unchecked(self) -> bool:
        return not self.detected and not self.checkable

    @property
    def missing_expected(self) -> tuple[CheckId, ...]:
        return tuple(c for c in self.expected if c not in self.detectors)


@dataclass(frozen=True, slots=True)
class TargetAudit:
    """Everything the audit found on one target."""

    target: str
    description: str
    tasks: int
    pairs: int
    injectable: bool
    variants: tuple[VariantAudit, ...]

    @property
    def correct(self) -> VariantAudit:
        return next(v for v in self.variants if v.kind is VariantKind.CORRECT)

    def classes(self) -> tuple[ClassSummary, ...]:
        return summarise_classes(self)

    def load_bearing(self) -> tuple[CheckId, ...]:
        found = {c for s in self.classes() for c in s.load_bearing}
        return tuple(c for c in CheckId if c in found)

    def problems(self) -> tuple[str, ...]:
        """What makes the audit fail: a correct oracle failing a check, a class undetected."""
        which = "correct oracle" if self.injectable else "oracle under audit"
        out = [
            f"{self.target}: the {which} fails {r.check} ({r.reason})"
            for r in self.correct.results
            if r.status is CheckStatus.FAIL
        ]
        out += [
            f"{self.target}: defect class {s.defect_class} ({s.slug}) is not detected by any check"
            for s in self.classes()
            if s.variants and not s.detected and s.checkable
        ]
        return tuple(out)

    def usable(self, check: CheckId) -> CheckResult:
        """The correct oracle's result for ``check`` (its usable task counts)."""
        return next(r for r in self.correct.results if r.check is check)

    def unchecked(self) -> tuple[str, ...]:
        """Classes that could not be checked: none of their expected detectors applied."""
        out = []
        for s in self.classes():
            if s.unchecked:
                why = "; ".join(f"{c} usable on {self.usable(c).usable_text}" for c in s.expected)
                out.append(
                    f"{self.target}: defect class {s.defect_class} ({s.slug}) could not be "
                    f"checked: its detectors did not apply on this task set ({why}); "
                    "add tasks they can use (see docs/audit.md, plan)"
                )
        return tuple(out)

    def contract_warnings(self) -> tuple[str, ...]:
        """Where the injection wiring, not the oracle, decided the outcome of a variant."""
        out = []
        correct_fp = self.correct.fingerprint
        for v in self.variants:
            if v.kind is not VariantKind.INJECTED:
                continue
            if v.fingerprint == correct_fp:
                slug = class_info(v.defect_class).slug if v.defect_class else ""
                hint = _CONTRACT_HINTS[v.defect_class] if v.defect_class else ""
                out.append(
                    f"{self.target}: variant {v.variant_id} ({slug}) behaves exactly like the "
                    "correct oracle under every probe here (equivalent; no check can catch "
                    f"it). If your oracle should be sensitive to it, check that it does {hint} "
                    "(docs/audit-your-benchmark.md, the injection contract)"
                )
            elif v.detected and v.detected_only_by_raise and v.kit_exceptions:
                out.append(
                    f"{self.target}: injected {v.variant_id} is detected only because scoring "
                    f"raised an exception of the kit's own making ({v.kit_exceptions[0]}); the "
                    "detection says nothing about the defect (fix: read the world only through "
                    "World's methods, or implement World.from_state; see "
                    "docs/audit-your-benchmark.md)"
                )
            elif v.detected and v.detected_only_by_raise:
                out.append(
                    f"{self.target}: injected {v.variant_id} is detected only because scoring "
                    "raised (in the oracle's own code, not the kit's); check that raising is "
                    "what your oracle should do there"
                )
        return tuple(out)

    def findings(self) -> tuple[str, ...]:
        """Reported, not fatal: undetected variants, expected detectors that did not fire."""
        which = "correct oracle" if self.injectable else "oracle under audit"
        out = [
            f"{self.target}: the {which}'s {r.check} is not applicable ({r.reason})"
            for r in self.correct.results
            if r.status is CheckStatus.NOT_APPLICABLE
        ]
        correct_fp = self.correct.fingerprint
        equivalent = {
            v.variant_id
            for v in self.variants
            if v.fingerprint == correct_fp and v is not self.correct
        }
        out += self.contract_warnings()
        for s in self.classes():
            if s.unchecked:
                continue
            for vid in s.undetected_variants:
                if vid in equivalent:
                    continue  # reported by contract_warnings, with what to check
                out.append(f"{self.target}: variant {vid} ({s.slug}) is not detected by any check")
            if s.detected and s.missing_expected:
                missing = ", ".join(s.missing_expected)
                out.append(
                    f"{self.target}: class {s.defect_class} not detected by expected {missing}"
                )
        for v in self.variants:
            if v.kind is VariantKind.NATIVE_DEFECT and v.missing_expected:
                missing = ", ".join(v.missing_expected)
                out.append(f"{self.target}: shipped defect {v.variant_id} passes {missing}")
        return tuple(out)


def audit_variant(target: str, variant: OracleVariant, plan: AuditPlan) -> VariantAudit:
    transcript: list[str] = []
    kit: set[str] = set()
    results = run_checks(_recorded(variant.factory, transcript, kit), plan)
    return VariantAudit(
        target=target,
        variant_id=variant.variant_id,
        kind=variant.kind,
        defect_class=variant.defect_class,
        description=variant.description,
        expected=variant.expected,
        results=results,
        fingerprint=digest_of(transcript),
        kit_exceptions=tuple(sorted(kit)),
    )


def audit_target(
    spec: TargetSpec,
    defects: Sequence[DefectVariant],
    *,
    tasks: Sequence[str] | None = None,
    seed: int = 0,
    max_pairs: int = 8,
    progress: Callable[[str], None] | None = None,
) -> TargetAudit:
    """Plan once (without scoring), then run the eight checks on every oracle variant;
    ``progress`` is told after the plan and after each variant."""
    plan = plan_audit(spec.correct, tasks, seed=seed, max_pairs=max_pairs)
    variants = spec.variants(defects)
    if progress is not None:
        progress(f"{spec.name}: planned {len(plan.tasks)} tasks, {len(plan.pairs)} pairs")
    audits = []
    for n, v in enumerate(variants, start=1):
        audits.append(audit_variant(spec.name, v, plan))
        if progress is not None:
            progress(f"{spec.name}: variant {n}/{len(variants)} ({v.variant_id})")
    return assemble(spec, plan, tuple(audits))


def assemble(spec: TargetSpec, plan: AuditPlan, audits: tuple[VariantAudit, ...]) -> TargetAudit:
    """A :class:`TargetAudit` from variant audits (run here or in worker processes)."""
    return TargetAudit(
        target=spec.name,
        description=spec.description,
        tasks=len(plan.tasks),
        pairs=len(plan.pairs),
        injectable=spec.injectable,
        variants=audits,
    )


_CONTRACT_HINTS: dict[DefectClass, str] = {
    DefectClass.D1: "read the agent's world from env.live (the variant scratches in it)",
    DefectClass.D2: "score each call afresh (the variant caches verdicts)",
    DefectClass.D3: "take its task from env.task and its gold actions from env.reference",
    DefectClass.D4: "call env.probe() after touching state (the variant scratches around it)",
    DefectClass.D5: "let its verdict depend on the state it reads",
    DefectClass.D6: (
        "read the agent's world through env.live's World methods and build gold worlds "
        "with env.fresh()"
    ),
    DefectClass.D7: "decide the verdict from env.live compared with worlds from env.fresh()",
}
"""What a kit oracle must do for a class's injection to reach it (docs: the contract)."""


def summarise_classes(audit: TargetAudit) -> tuple[ClassSummary, ...]:
    correct_fp = audit.correct.fingerprint
    out: list[ClassSummary] = []
    for info in DEFECT_CLASSES:
        vs = [
            v
            for v in audit.variants
            if v.kind is VariantKind.INJECTED and v.defect_class is info.defect_class
        ]
        if not vs:
            continue
        behaviours = {v.fingerprint for v in vs if v.fingerprint != correct_fp}
        detected_behaviours = {v.fingerprint for v in vs if v.detected}
        detectors = {c for v in vs for c in v.failed}
        ordered = tuple(c for c in CheckId if c in detectors)
        out.append(
            ClassSummary(
                target=audit.target,
                defect_class=info.defect_class,
                slug=info.slug,
                variants=len(vs),
                distinct=len(behaviours),
                equivalent=sum(v.fingerprint == correct_fp for v in vs),
                detected=sum(v.detected for v in vs),
                detected_distinct=len(detected_behaviours),
                detectors=ordered,
                expected=class_info(info.defect_class).expected,
                load_bearing=ordered if len(ordered) == 1 else (),
                undetected_variants=tuple(v.variant_id for v in vs if not v.detected),
                inv4_not_applicable=tuple(
                    v.variant_id
                    for v in vs
                    if v.status(CheckId.INV_4) is CheckStatus.NOT_APPLICABLE
                ),
                checkable=any(
                    v.status(c) is not CheckStatus.NOT_APPLICABLE
                    for v in vs
                    for c in class_info(info.defect_class).expected
                ),
            )
        )
    return tuple(out)


def variant_load_bearing(audit: TargetAudit) -> tuple[tuple[str, CheckId], ...]:
    """(variant, check) where the check is the variant's only detector."""
    return tuple(
        (v.variant_id, v.failed[0])
        for v in audit.variants
        if v.kind is VariantKind.INJECTED and len(v.failed) == 1
    )
