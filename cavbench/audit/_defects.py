"""Defect injection: seven classes, several variants each, as wrappers around a correct oracle.

A variant never edits the oracle it breaks. It wraps it (:class:`~cavbench.audit._kit.Oracle`
in, ``Oracle`` out) and changes only what the oracle is handed or what it hands back: the
live world used as scratch space, a cached verdict, another task's reference, a swallowed
exception, a world shown in another representation, a verdict overridden when anything
changed. The registry (:data:`DEFECT_VARIANTS`) records each variant's class and the checks
expected to catch it; the expectation per class is the union in :data:`DEFECT_CLASSES`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Final

from cavbench.audit._kit import Domain, Oracle, OracleEnv, OracleFactory, Representation, World
from cavbench.audit._protocol import JSON, ActionKind, AuditError, Component, ScoreResult, digest_of
from cavbench.audit._vocab import CheckId, DefectClass


@dataclass(frozen=True, slots=True)
class DefectClassInfo:
    """One defect class: its slug, what it changes and the checks expected to detect it."""

    defect_class: DefectClass
    slug: str
    change: str
    expected: tuple[CheckId, ...]
    note: str = ""


DEFECT_CLASSES: Final[tuple[DefectClassInfo, ...]] = (
    DefectClassInfo(
        DefectClass.D1,
        "mutate-no-restore",
        "scoring replays the reference into the live world and leaves it there",
        (CheckId.INV_1, CheckId.INV_2, CheckId.INV_4, CheckId.INV_5),
    ),
    DefectClassInfo(
        DefectClass.D2,
        "sticky-verdict",
        "once scored, the target returns the same verdict until a reset that does not clear it",
        (CheckId.INV_2, CheckId.INV_3),
    ),
    DefectClassInfo(
        DefectClass.D3,
        "stale-cross-task-reference",
        "the reference result is cached and reused for the next task",
        (CheckId.INV_3,),
    ),
    DefectClassInfo(
        DefectClass.D4,
        "restore-not-exception-safe",
        "snapshot/restore without finally",
        (CheckId.INV_4,),
    ),
    DefectClassInfo(
        DefectClass.D5,
        "saturated",
        "the verdict is always pass",
        (CheckId.CTL_2, CheckId.CTL_3),
        note="INV-4 is not applicable where the saturated oracle swallows the exception",
    ),
    DefectClassInfo(
        DefectClass.D6,
        "never-matching-comparison",
        "compares different representations, so nothing passes",
        (CheckId.CTL_1,),
    ),
    DefectClassInfo(
        DefectClass.D7,
        "any-change-passes",
        "pass when the agent changed anything at all",
        (CheckId.CTL_3,),
    ),
)
_CLASS_INFO: Final = {info.defect_class: info for info in DEFECT_CLASSES}


def class_info(defect_class: DefectClass) -> DefectClassInfo:
    return _CLASS_INFO[defect_class]


Wrap = Callable[[Oracle, Domain], Oracle]


@dataclass(frozen=True, slots=True)
class DefectVariant:
    """One way of injecting a defect class, and the checks expected to catch this variant."""

    variant_id: str
    defect_class: DefectClass
    slug: str
    description: str
    wrap: Wrap
    expected: tuple[CheckId, ...]


class _Wrapper:
    """Base of every defect wrapper: keeps the inner oracle and names the result."""

    variant_id = ""

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        self._inner = inner
        self._domain = domain

    @property
    def name(self) -> str:
        return f"{self._inner.name}+{self.variant_id}"


def _scratch_reference(env: OracleEnv, *, world: bool, log: bool) -> None:
    """Use the live world as the gold scratchpad: reset it and replay the reference."""
    live = env.live
    if world:
        live.reset_world()
    for action in env.reference:
        if world:
            live.apply_effect(action)
        if log:
            live.append_log(action)


# -- D1 mutate-no-restore ---------------------------------------------------------------
class _ScratchLiveNoRestore(_Wrapper):
    """Judges a copy of the agent's world, after using the live world as scratch space."""

    world = True
    log = True

    def score(self, env: OracleEnv) -> ScoreResult:
        agent = env.live.copy()
        _scratch_reference(env, world=self.world, log=self.log)
        env.probe()
        return self._inner.score(env.with_live(agent).without_probe())


class _D1World(_ScratchLiveNoRestore):
    variant_id = "D1a"
    log = False


class _D1Log(_ScratchLiveNoRestore):
    variant_id = "D1b"
    world = False


class _D1Both(_ScratchLiveNoRestore):
    variant_id = "D1c"


class _D1AfterVerdict(_Wrapper):
    """Scores first, then replays the reference into the live world (probe fires first)."""

    variant_id = "D1d"

    def score(self, env: OracleEnv) -> ScoreResult:
        result = self._inner.score(env)
        _scratch_reference(env, world=True, log=True)
        return result


# -- D2 sticky verdict ------------------------------------------------------------------
class _Sticky(_Wrapper):
    """Caches the first verdict under a key that does not capture the state."""

    def _key(self, env: OracleEnv) -> Hashable:
        return None

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        super().__init__(inner, domain)
        self._cache: dict[Hashable, ScoreResult] = {}

    def score(self, env: OracleEnv) -> ScoreResult:
        key = self._key(env)
        if key not in self._cache:
            self._cache[key] = self._inner.score(env)
        return self._cache[key]


class _D2Forever(_Sticky):
    variant_id = "D2a"


class _D2PerTask(_Sticky):
    variant_id = "D2b"

    def _key(self, env: OracleEnv) -> Hashable:
        return env.task


class _D2PerEpisode(_Sticky):
    variant_id = "D2c"

    def _key(self, env: OracleEnv) -> Hashable:
        return env.episode


class _D2PassLatch(_Wrapper):
    """Once a pass has been returned, every later call returns that pass."""

    variant_id = "D2d"

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        super().__init__(inner, domain)
        self._latched: ScoreResult | None = None

    def score(self, env: OracleEnv) -> ScoreResult:
        if self._latched is not None:
            return self._latched
        result = self._inner.score(env)
        if result.passed:
            self._latched = result
        return result


# -- D3 stale cross-task reference ------------------------------------------------------
class _D3First(_Wrapper):
    """The first task's reference is cached and reused for every later task."""

    variant_id = "D3a"

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        super().__init__(inner, domain)
        self._task: str | None = None

    def score(self, env: OracleEnv) -> ScoreResult:
        if self._task is None:
            self._task = env.task
        return self._inner.score(env if self._task == env.task else env.retarget(self._task))


class _D3Previous(_Wrapper):
    """Each call reuses the reference of the task scored before it (one behind)."""

    variant_id = "D3b"

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        super().__init__(inner, domain)
        self._previous: str | None = None

    def score(self, env: OracleEnv) -> ScoreResult:
        use = self._previous or env.task
        self._previous = env.task
        return self._inner.score(env if use == env.task else env.retarget(use))


class _D3KeyedByFirstTool(_Wrapper):
    """The reference result is cached under the name of its first tool, not the task."""

    variant_id = "D3c"

    def __init__(self, inner: Oracle, domain: Domain) -> None:
        super().__init__(inner, domain)
        self._by_key: dict[str, str] = {}

    def score(self, env: OracleEnv) -> ScoreResult:
        key = env.reference[0].name if env.reference else ""
        use = self._by_key.setdefault(key, env.task)
        return self._inner.score(env if use == env.task else env.retarget(use))


# -- D4 restore not exception-safe ------------------------------------------------------
class _D4NoFinally(_Wrapper):
    """Snapshot, scratch in the live world, restore: with no ``finally``."""

    variant_id = "D4a"

    def score(self, env: OracleEnv) -> ScoreResult:
        checkpoint = env.live.checkpoint()
        _scratch_reference(env, world=True, log=True)
        env.probe()
        env.live.restore(checkpoint)
        return self._inner.score(env.without_probe())


class _D4WrongExcept(_Wrapper):
    """Restores in an ``except`` clause that names the wrong exception class."""

    variant_id = "D4b"

    def score(self, env: OracleEnv) -> ScoreResult:
        checkpoint = env.live.checkpoint()
        try:
            _scratch_reference(env, world=True, log=False)
            env.probe()
            env.live.restore(checkpoint)
        except KeyError:
            env.live.restore(checkpoint)
            raise
        return self._inner.score(env.without_probe())


class _D4LogOnly(_Wrapper):
    """Appends the reference to the live log as scratch and truncates it on success only."""

    variant_id = "D4c"

    def score(self, env: OracleEnv) -> ScoreResult:
        length = len(env.live.log())
        _scratch_reference(env, world=False, log=True)
        env.probe()
        env.live.truncate_log(length)
        return self._inner.score(env.without_probe())


# -- D5 saturated -----------------------------------------------------------------------
class _D5Always(_Wrapper):
    """Never asks the oracle: always pass."""

    variant_id = "D5a"

    def score(self, env: OracleEnv) -> ScoreResult:
        return ScoreResult(True, (), note="saturated")


class _D5Swallowing(_Wrapper):
    """Asks the oracle inside ``try/except Exception`` and reports pass whatever it said."""

    variant_id = "D5b"

    def score(self, env: OracleEnv) -> ScoreResult:
        try:
            inner = self._inner.score(env)
        except Exception:
            return ScoreResult(True, (), note="saturated (error swallowed)")
        return ScoreResult(True, tuple(Component(c.name, True) for c in inner.components))


class _D5Primary(_Wrapper):
    """Saturates the domain's primary component only; the verdict is recomputed from parts."""

    variant_id = "D5c"

    def score(self, env: OracleEnv) -> ScoreResult:
        inner = self._inner.score(env)
        primary = self._domain.primary_component
        comps = tuple(Component(c.name, True) if c.name == primary else c for c in inner.components)
        return ScoreResult(all(c.passed for c in comps), comps, note=inner.note)


class _D5PassOnError(_Wrapper):
    """Returns the oracle's verdict, but pass when scoring raises (errors logged and dropped)."""

    variant_id = "D5d"

    def score(self, env: OracleEnv) -> ScoreResult:
        try:
            return self._inner.score(env)
        except Exception:
            return ScoreResult(True, (), note="pass on error")


# -- D6 never-matching comparison ------------------------------------------------------
class _D6Live(_Wrapper):
    """The oracle sees the agent's world in another representation than its own."""

    rep = Representation.STRINGIFIED

    def score(self, env: OracleEnv) -> ScoreResult:
        return self._inner.score(env.with_live(env.live.presented_as(self.rep)))


class _D6LiveStringified(_D6Live):
    variant_id = "D6a"


class _D6LiveRekeyed(_D6Live):
    variant_id = "D6b"
    rep = Representation.REKEYED


class _D6GoldStringified(_Wrapper):
    """The oracle's fresh (gold-side) worlds are seen stringified; the agent's are not."""

    variant_id = "D6c"

    def score(self, env: OracleEnv) -> ScoreResult:
        fresh = env.fresh

        def presented() -> World:
            return fresh().presented_as(Representation.STRINGIFIED)

        return self._inner.score(replace(env, fresh=presented))


# -- D7 any change passes ---------------------------------------------------------------
class _AnyChange(_Wrapper):
    """Overrides a failing verdict with pass when the agent changed something."""

    def _changed(self, env: OracleEnv) -> bool:
        raise NotImplementedError

    def score(self, env: OracleEnv) -> ScoreResult:
        inner = self._inner.score(env)
        if inner.passed or not self._changed(env):
            return inner
        return ScoreResult(True, inner.components, note="passed: the agent changed something")


class _D7World(_AnyChange):
    variant_id = "D7a"

    def _changed(self, env: OracleEnv) -> bool:
        return digest_of(env.live.state()) != digest_of(env.fresh().state())


class _D7Log(_AnyChange):
    variant_id = "D7b"

    def _changed(self, env: OracleEnv) -> bool:
        return any(a.kind is ActionKind.TOOL for a in env.live.log())


class _D7Touched(_AnyChange):
    variant_id = "D7c"

    def _changed(self, env: OracleEnv) -> bool:
        start = env.fresh().state()
        gold = env.fresh()
        for action in env.reference:
            gold.apply(action)
        wanted = changed_resources(start, gold.state())
        return bool(wanted & changed_resources(start, env.live.state()))


def changed_resources(before: dict[str, JSON], after: dict[str, JSON]) -> set[str]:
    """Resources (``collection/id``, or a top-level key) whose value differs."""
    out: set[str] = set()
    for key in before.keys() | after.keys():
        a, b = before.get(key), after.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out |= {f"{key}/{rid}" for rid in a.keys() | b.keys() if a.get(rid) != b.get(rid)}
        elif a != b:
            out.add(key)
    return out


class _V(StrEnum):
    """Variant slugs (registry keys) so the table below reads as data."""

    WORLD = "world-only"
    LOG = "log-only"
    BOTH = "world-and-log"
    AFTER = "after-verdict"
    FOREVER = "forever"
    PER_TASK = "per-task"
    PER_EPISODE = "per-episode"
    PASS_LATCH = "pass-latch"
    FIRST = "first-task"
    PREVIOUS = "previous-task"
    KEYED = "keyed-by-first-tool"
    NO_FINALLY = "no-finally"
    WRONG_EXCEPT = "wrong-except"
    LOG_SCRATCH = "log-scratch"
    ALWAYS = "always"
    SWALLOW = "swallow-and-pass"
    PRIMARY = "primary-component"
    ON_ERROR = "pass-on-error"
    LIVE_STR = "live-stringified"
    LIVE_KEYS = "live-rekeyed"
    GOLD_STR = "gold-stringified"
    ANY_WORLD = "any-world-change"
    ANY_ACTION = "any-action"
    TOUCHED = "touched-reference-resource"


_I1, _I2, _I3, _I4, _I5 = (
    CheckId.INV_1,
    CheckId.INV_2,
    CheckId.INV_3,
    CheckId.INV_4,
    CheckId.INV_5,
)
_C1, _C2, _C3 = CheckId.CTL_1, CheckId.CTL_2, CheckId.CTL_3

DEFECT_VARIANTS: Final[tuple[DefectVariant, ...]] = (
    DefectVariant("D1a", DefectClass.D1, _V.WORLD,
                  "live world reset and the reference replayed into it; agent judged first",
                  _D1World, (_I1, _I2, _I4, _I5)),
    DefectVariant("D1b", DefectClass.D1, _V.LOG,
                  "the reference appended to the live action log and left there",
                  _D1Log, (_I1, _I4, _I5)),
    DefectVariant("D1c", DefectClass.D1, _V.BOTH,
                  "world reset and reference replayed with logging (the published shape)",
                  _D1Both, (_I1, _I2, _I4, _I5)),
    DefectVariant("D1d", DefectClass.D1, _V.AFTER,
                  "verdict computed first, then the reference replayed into the live world",
                  _D1AfterVerdict, (_I1, _I2, _I5)),
    DefectVariant("D2a", DefectClass.D2, _V.FOREVER,
                  "first verdict cached on the oracle and never cleared",
                  _D2Forever, (_I2, _I3)),
    DefectVariant("D2b", DefectClass.D2, _V.PER_TASK,
                  "verdict cached per task id; a reset of the same task does not clear it",
                  _D2PerTask, (_I2,)),
    DefectVariant("D2c", DefectClass.D2, _V.PER_EPISODE,
                  "verdict cached per episode: later actions in the episode are not seen",
                  _D2PerEpisode, (_I2,)),
    DefectVariant("D2d", DefectClass.D2, _V.PASS_LATCH,
                  "once a pass was returned every later verdict is that pass",
                  _D2PassLatch, (_I3,)),
    DefectVariant("D3a", DefectClass.D3, _V.FIRST,
                  "the first task's reference reused for every later task",
                  _D3First, (_I3,)),
    DefectVariant("D3b", DefectClass.D3, _V.PREVIOUS,
                  "each score reuses the previously scored task's reference",
                  _D3Previous, (_I3,)),
    DefectVariant("D3c", DefectClass.D3, _V.KEYED,
                  "reference result cached under its first tool's name, not the task",
                  _D3KeyedByFirstTool, (_I3,)),
    DefectVariant("D4a", DefectClass.D4, _V.NO_FINALLY,
                  "snapshot, scratch in the live world and log, restore without finally",
                  _D4NoFinally, (_I4,)),
    DefectVariant("D4b", DefectClass.D4, _V.WRONG_EXCEPT,
                  "world restored only in `except KeyError`",
                  _D4WrongExcept, (_I4,)),
    DefectVariant("D4c", DefectClass.D4, _V.LOG_SCRATCH,
                  "reference appended to the log as scratch, truncated on success only",
                  _D4LogOnly, (_I4,)),
    DefectVariant("D5a", DefectClass.D5, _V.ALWAYS,
                  "always pass, the oracle never asked",
                  _D5Always, (_C2, _C3)),
    DefectVariant("D5b", DefectClass.D5, _V.SWALLOW,
                  "the oracle asked inside try/except, pass reported whatever it said",
                  _D5Swallowing, (_C2, _C3)),
    DefectVariant("D5c", DefectClass.D5, _V.PRIMARY,
                  "the primary component (state match) saturated, the verdict recomputed",
                  _D5Primary, (_C2,)),
    DefectVariant("D5d", DefectClass.D5, _V.ON_ERROR,
                  "pass whenever scoring raises (gold-action errors logged and swallowed)",
                  _D5PassOnError, ()),
    DefectVariant("D6a", DefectClass.D6, _V.LIVE_STR,
                  "the agent's world compared with scalars stringified",
                  _D6LiveStringified, (_C1,)),
    DefectVariant("D6b", DefectClass.D6, _V.LIVE_KEYS,
                  "the agent's world compared with resource ids upper-cased",
                  _D6LiveRekeyed, (_C1,)),
    DefectVariant("D6c", DefectClass.D6, _V.GOLD_STR,
                  "the gold side (fresh worlds) compared stringified",
                  _D6GoldStringified, (_C1,)),
    DefectVariant("D7a", DefectClass.D7, _V.ANY_WORLD,
                  "pass when the world differs from its start at all",
                  _D7World, (_C3,)),
    DefectVariant("D7b", DefectClass.D7, _V.ANY_ACTION,
                  "pass when the agent made any tool call",
                  _D7Log, (_C3,)),
    DefectVariant("D7c", DefectClass.D7, _V.TOUCHED,
                  "pass when the agent changed any resource the reference changes",
                  _D7Touched, (_C3,)),
)  # fmt: skip
_BY_VARIANT: Final = {v.variant_id: v for v in DEFECT_VARIANTS}


def variant(variant_id: str) -> DefectVariant:
    try:
        return _BY_VARIANT[variant_id]
    except KeyError:
        raise AuditError(
            f"no defect variant {variant_id!r} (fix: one of {', '.join(_BY_VARIANT)})"
        ) from None


def select_variants(spec: str) -> tuple[DefectVariant, ...]:
    """``all``, ``none``, or a comma list of classes (``D1``) and variants (``D3b``)."""
    spec = spec.strip()
    if spec in ("all", ""):
        return DEFECT_VARIANTS
    if spec == "none":
        return ()
    chosen: list[DefectVariant] = []
    for token in (t.strip() for t in spec.split(",") if t.strip()):
        if token in DefectClass.__members__:
            chosen += [v for v in DEFECT_VARIANTS if v.defect_class == token]
        else:
            chosen.append(variant(token))
    return tuple(dict.fromkeys(chosen))


def inject(defect: DefectVariant, oracle_factory: OracleFactory, domain: Domain) -> OracleFactory:
    """An oracle factory whose oracles are ``oracle_factory()``'s wrapped in ``defect``."""

    def make() -> Oracle:
        return defect.wrap(oracle_factory(), domain)

    return make
