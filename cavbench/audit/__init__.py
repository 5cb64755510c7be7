"""Oracle-integrity audit: is a benchmark's grader itself sound?

An oracle is reached through a four-operation target protocol (:class:`AuditTarget`:
``reset``, ``apply``, ``score``, ``read_state``), audited by eight checks (five state
invariants, three known-answer controls) and challenged with seven injected defect classes.
See ``docs/audit.md``; to audit your own benchmark, ``docs/audit-your-benchmark.md``.
Everything a target author needs is exported here (``__all__``); the underscored modules
are not an interface. The protocol, the kit, the checks and the defect wrappers import
nothing of cavbench's runtime (a test checks it); only the v1 target, the sensitivity
analysis and the CLI do, and they are loaded when used.
"""

from cavbench.audit._audit import (
    ClassSummary,
    TargetAudit,
    VariantAudit,
    audit_target,
    variant_load_bearing,
)
from cavbench.audit._bootstrap import Interval, cluster_bootstrap
from cavbench.audit._checks import (
    CHECKS,
    AuditPlan,
    CheckResult,
    TaskPlan,
    plan_audit,
    run_checks,
)
from cavbench.audit._defects import (
    DEFECT_CLASSES,
    DEFECT_VARIANTS,
    DefectClassInfo,
    DefectVariant,
    class_info,
    inject,
    select_variants,
)
from cavbench.audit._kit import (
    Domain,
    KitTarget,
    ListView,
    Oracle,
    OracleEnv,
    OracleFactory,
    Representation,
    SharedStarts,
    StateView,
    World,
    kit_factory,
    replay,
)
from cavbench.audit._load import load_target
from cavbench.audit._protocol import (
    JSON,
    Action,
    ActionKind,
    AuditError,
    AuditTarget,
    Component,
    InjectedFault,
    JSONObject,
    Probe,
    ScoreResult,
    StateDigest,
    TargetFactory,
    canonical_json,
    digest_of,
)
from cavbench.audit._replay import (
    Agent,
    EpisodeRecord,
    read_records,
    record_episodes,
    replay_records,
    summarise,
)
from cavbench.audit._spec import OracleVariant, TargetSpec
from cavbench.audit._vocab import CheckId, CheckStatus, DefectClass, VariantKind
from cavbench.audit.targets import shipped_target_names

__all__ = [
    "CHECKS",
    "JSON",
    "JSONObject",
    "ListView",
    "OracleFactory",
    "SharedStarts",
    "StateView",
    "canonical_json",
    "class_info",
    "digest_of",
    "replay",
    "DEFECT_CLASSES",
    "DEFECT_VARIANTS",
    "Action",
    "ActionKind",
    "Agent",
    "AuditError",
    "AuditPlan",
    "AuditTarget",
    "CheckId",
    "CheckResult",
    "CheckStatus",
    "ClassSummary",
    "Component",
    "DefectClass",
    "DefectClassInfo",
    "DefectVariant",
    "Domain",
    "EpisodeRecord",
    "InjectedFault",
    "Interval",
    "KitTarget",
    "Oracle",
    "OracleEnv",
    "OracleVariant",
    "Probe",
    "Representation",
    "ScoreResult",
    "StateDigest",
    "TargetAudit",
    "TargetFactory",
    "TargetSpec",
    "TaskPlan",
    "VariantAudit",
    "VariantKind",
    "World",
    "audit_target",
    "cluster_bootstrap",
    "inject",
    "kit_factory",
    "load_target",
    "plan_audit",
    "read_records",
    "record_episodes",
    "replay_records",
    "run_checks",
    "select_variants",
    "shipped_target_names",
    "summarise",
    "variant_load_bearing",
]
