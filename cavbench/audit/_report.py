"""Rows for the audit tables, the Markdown reports and the heat-map figure.

Everything here is a pure function of audit results, except the writers at the bottom,
which put tables, report, figure and a manifest into one folder. Nothing reads a clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cavbench.audit._audit import TargetAudit, VariantAudit, variant_load_bearing
from cavbench.audit._checks import CHECK_DOCS
from cavbench.audit._protocol import JSONObject
from cavbench.audit._replay import (
    CorrectedEpisode,
    SummaryCorrection,
    TaskCorrection,
)
from cavbench.audit._sensitivity import (
    RULES,
    HeadlineRow,
    Invalidity,
    SensitivityRow,
    sensitivity_summary,
)
from cavbench.audit._tables import AuditTable, file_sha256, write_rows
from cavbench.audit._vocab import CheckId, CheckStatus, VariantKind

REPORT_FILE: Final = "audit_report.md"
FIGURE_FILE: Final = "audit_heatmap.png"
MANIFEST_FILE: Final = "manifest.json"
CORRECTION_REPORT: Final = "correction_report.md"
SENSITIVITY_REPORT: Final = "sensitivity_report.md"
_MARK: Final = {CheckStatus.FAIL: "✗", CheckStatus.PASS: "·", CheckStatus.NOT_APPLICABLE: "n/a"}


# -- rows ---------------------------------------------------------------------------------
def _ids(checks: Sequence[CheckId]) -> list[str]:
    return [c.value for c in checks]


def audit_rows(audits: Sequence[TargetAudit]) -> dict[AuditTable, list[dict[str, Any]]]:
    """One row list per audit table."""
    checks: list[dict[str, Any]] = []
    detection: list[dict[str, Any]] = []
    classes: list[dict[str, Any]] = []
    bearing: list[dict[str, Any]] = []
    for audit in audits:
        correct_fp = audit.correct.fingerprint
        for v in audit.variants:
            dc = v.defect_class.value if v.defect_class else None
            for r in v.results:
                checks.append(
                    {
                        "target": audit.target, "variant_id": v.variant_id, "kind": v.kind.value,
                        "defect_class": dc, "check": r.check.value, "covers": r.check.covers,
                        "status": r.status.value, "expected_to_fail": r.check in v.expected,
                        "reason": r.reason, "runs": r.runs, "failed_runs": r.failed_runs,
                        "not_applicable_runs": r.not_applicable_runs,
                        "usable_tasks": r.usable, "tasks": r.universe,
                    }
                )  # fmt: skip
            detection.append(
                {
                    "target": audit.target, "variant_id": v.variant_id, "kind": v.kind.value,
                    "defect_class": dc, "description": v.description, "detected": v.detected,
                    "detectors": _ids(v.failed), "expected": _ids(v.expected),
                    "missing_expected": _ids(v.missing_expected),
                    "equivalent_to_correct": v.kind is not VariantKind.CORRECT
                    and v.fingerprint == correct_fp,
                    "behaviour": v.fingerprint, "inv4_status": v.status(CheckId.INV_4).value,
                }
            )  # fmt: skip
        for s in audit.classes():
            classes.append(
                {
                    "target": s.target, "defect_class": s.defect_class.value, "slug": s.slug,
                    "variants": s.variants, "distinct": s.distinct, "equivalent": s.equivalent,
                    "detected": s.detected, "detected_distinct": s.detected_distinct,
                    "detectors": _ids(s.detectors), "expected": _ids(s.expected),
                    "missing_expected": _ids(s.missing_expected),
                    "load_bearing": _ids(s.load_bearing),
                    "undetected_variants": list(s.undetected_variants),
                    "inv4_not_applicable": list(s.inv4_not_applicable),
                }
            )  # fmt: skip
            bearing += [
                {"target": s.target, "level": "class", "defect_class": s.defect_class.value,
                 "variant_id": None, "check": c.value}
                for c in s.load_bearing
            ]  # fmt: skip
        by_id = {v.variant_id: v for v in audit.variants}
        for vid, check in variant_load_bearing(audit):
            dc = by_id[vid].defect_class
            bearing.append(
                {"target": audit.target, "level": "variant",
                 "defect_class": dc.value if dc else "", "variant_id": vid, "check": check.value}
            )  # fmt: skip
    return {
        AuditTable.AUDIT_CHECKS: checks,
        AuditTable.AUDIT_DETECTION: detection,
        AuditTable.AUDIT_CLASSES: classes,
        AuditTable.AUDIT_LOAD_BEARING: bearing,
    }


def correction_rows(
    target: str,
    episodes: Sequence[CorrectedEpisode],
    tasks: Sequence[TaskCorrection],
    summary: Sequence[SummaryCorrection],
    *,
    seed: int,
) -> dict[AuditTable, list[dict[str, Any]]]:
    return {
        AuditTable.CORRECTION_EPISODES: [
            {
                "record_id": e.record_id, "target": target, "task": e.task,
                "agent": e.agent.value, "repetition": e.repetition, "actions": e.actions,
                "passed_before": e.before.passed, "passed_after": e.after.passed,
                "components_before": json.dumps(e.before.as_json()["components"], sort_keys=True),
                "components_after": json.dumps(e.after.as_json()["components"], sort_keys=True),
                "changed": e.changed,
            }
            for e in episodes
        ],
        AuditTable.CORRECTION_TASKS: [
            {
                "task": t.task, "agent": t.agent.value, "measure": t.measure,
                "episodes": t.episodes, "passed_before": t.passed_before,
                "passed_after": t.passed_after,
            }
            for t in tasks
        ],
        AuditTable.CORRECTION_SUMMARY: [
            {
                "agent": s.agent, "measure": s.measure, "episodes": s.episodes, "tasks": s.tasks,
                "passed_before": s.passed_before, "passed_after": s.passed_after,
                "rate_before": s.before.estimate, "before_low": s.before.low,
                "before_high": s.before.high, "rate_after": s.after.estimate,
                "after_low": s.after.low, "after_high": s.after.high,
                "delta": s.delta.estimate, "delta_low": s.delta.low, "delta_high": s.delta.high,
                "level": s.before.level, "resamples": s.before.num_resamples, "seed": seed,
            }
            for s in summary
        ],
    }  # fmt: skip


def sensitivity_rows(
    rows: Sequence[SensitivityRow], headline: Sequence[HeadlineRow]
) -> dict[AuditTable, list[dict[str, Any]]]:
    out: list[dict[str, Any]] = []
    for r in rows:
        row: dict[str, Any] = {
            "scenario_id": r.scenario_id, "family": r.family,
            "temporal_in_focus": r.temporal_in_focus, "invalidity": r.invalidity.value,
            "applicable": r.applicable, "note": r.note,
        }  # fmt: skip
        for k, rule in enumerate(RULES):
            row[f"caught_{rule.value}"] = r.caught[k] if r.applicable else None
            row[f"right_reason_{rule.value}"] = r.right_reason[k] if r.applicable else None
            row[f"codes_{rule.value}"] = r.codes[k] if r.applicable else None
        out.append(row)
    return {
        AuditTable.SENSITIVITY: out,
        AuditTable.SENSITIVITY_HEADLINE: [
            {
                "profile": h.profile, "rule": h.rule.value, "n": h.n, "outcome": h.outcome,
                "policy_aware": h.policy_aware, "commit_valid": h.commit_valid,
                "verdicts_changed": h.verdicts_changed, "stale_flagged": h.stale_flagged,
            }
            for h in headline
        ],
    }  # fmt: skip


# -- Markdown -----------------------------------------------------------------------------
def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return out


def _provenance_line(provenance: JSONObject) -> str:
    return ", ".join(
        f"{k} `{provenance[k]}`" for k in sorted(provenance) if provenance[k] is not None
    )


def _variant_row(v: VariantAudit) -> list[object]:
    return [
        v.variant_id,
        v.defect_class.value if v.defect_class else "—",
        *(_MARK[v.status(c)] for c in CheckId),
        "yes" if v.detected else "**no**",
        ", ".join(v.missing_expected) or "—",
        v.description,
    ]


def render_audit_report(audits: Sequence[TargetAudit], provenance: JSONObject) -> str:
    """The audit report: summary, then per target the correct oracle, shipped defects, the
    class-level and variant-level matrices (both denominators) and the load-bearing set."""
    lines = ["# Oracle-integrity audit", "", _provenance_line(provenance), ""]
    lines += [
        "Marks: ✗ the check failed (the defect was detected), · the check passed, n/a the "
        "check did not apply (never counted as a pass). A variant is *equivalent* when every "
        "verdict, error and state digest the checks observed equals the correct oracle's.",
        "",
        "## Summary",
        "",
    ]
    summary = []
    for a in audits:
        classes = a.classes()
        injected = [v for v in a.variants if v.kind is VariantKind.INJECTED]
        correct_ok = sum(r.status is CheckStatus.PASS for r in a.correct.results)
        distinct = sum(s.distinct for s in classes)
        summary.append(
            [
                a.target, a.tasks, f"{correct_ok}/8 pass",
                f"{sum(bool(s.detected) for s in classes)}/{len(classes)}",
                f"{sum(v.detected for v in injected)}/{len(injected)}",
                f"{sum(s.detected_distinct for s in classes)}/{distinct}",
                ", ".join(a.load_bearing()) or "—",
                "**" + str(len(a.problems())) + "**" if a.problems() else "0",
            ]
        )  # fmt: skip
    lines += _table(
        ["target", "tasks", "correct oracle", "classes detected", "variants detected (all)",
         "behaviours detected (distinct)", "load-bearing checks", "problems"],
        summary,
    )  # fmt: skip
    lines += ["", "## Checks", ""]
    lines += _table(
        ["check", "covers", "definition"], [[c.value, c.covers, CHECK_DOCS[c]] for c in CheckId]
    )
    for a in audits:
        lines += ["", f"## Target `{a.target}`", "", a.description, ""]
        lines += [f"{a.tasks} tasks, {a.pairs} task pairs for INV-3 (each in both orders).", ""]
        lines += ["### Correct oracle", ""]
        lines += _table(
            ["check", "status", "reason"],
            [[r.check.value, r.status.value, r.reason] for r in a.correct.results],
        )
        natives = [v for v in a.variants if v.kind is VariantKind.NATIVE_DEFECT]
        for v in natives:
            lines += ["", f"### Shipped defective oracle `{v.variant_id}`", "", v.description, ""]
            lines += _table(
                ["check", "status", "expected to fail", "reason"],
                [
                    [
                        r.check.value,
                        r.status.value,
                        "yes" if r.check in v.expected else "",
                        r.reason,
                    ]
                    for r in v.results
                ],
            )
        classes = a.classes()
        if classes:
            lines += ["", "### Class-level detection", ""]
            lines += [
                "Per check: how many of the class's variants it detected. *Variants* counts "
                "all variants; *distinct* counts distinct behaviours, leaving out variants "
                "equivalent to the correct oracle.",
                "",
            ]
            rows = []
            for s in classes:
                vs = [
                    v for v in a.variants
                    if v.kind is VariantKind.INJECTED and v.defect_class is s.defect_class
                ]  # fmt: skip
                per_check = [sum(c in v.failed for v in vs) or "·" for c in CheckId]
                rows.append(
                    [
                        f"{s.defect_class} {s.slug}", *per_check,
                        f"{s.detected}/{s.variants}", f"{s.detected_distinct}/{s.distinct}",
                        s.equivalent, ", ".join(s.expected),
                        ", ".join(s.missing_expected) or "—", ", ".join(s.load_bearing) or "—",
                    ]
                )  # fmt: skip
            lines += _table(
                ["class", *[c.value for c in CheckId], "detected (all)", "detected (distinct)",
                 "equivalent", "expected", "expected not firing", "load-bearing"],
                rows,
            )  # fmt: skip
            lines += ["", "### Variant-level detection", ""]
            lines += _table(
                ["variant", "class", *[c.value for c in CheckId], "detected",
                 "expected not firing", "what it does"],
                [_variant_row(v) for v in a.variants if v.kind is VariantKind.INJECTED],
            )  # fmt: skip
            bearing = a.load_bearing()
            lines += [
                "",
                f"**Load-bearing checks** (the only detector of some class): "
                f"{', '.join(bearing) if bearing else 'none'}.",
            ]
            per_class = [f"{s.defect_class}→{s.load_bearing[0]}" for s in classes if s.load_bearing]
            if per_class:
                lines += ["", "Uniquely necessary per class: " + ", ".join(per_class) + "."]
        findings, problems = a.findings(), a.problems()
        usable = ", ".join(f"{r.check} {r.usable_text}" for r in a.correct.results)
        lines += ["", f"**Usable tasks per check** (correct oracle): {usable}."]
        lines += ["", "### Findings", ""]
        lines += [f"- **problem**: {p}" for p in problems]
        lines += [f"- **could not be checked**: {u}" for u in a.unchecked()]
        lines += [f"- {f}" for f in findings]
        if not findings and not problems:
            lines += ["- none"]
    lines += ["", f"![detection heat map]({FIGURE_FILE})", ""]
    return "\n".join(lines)


def render_correction_report(
    target: str,
    source: str,
    summary: Sequence[SummaryCorrection],
    episodes: Sequence[CorrectedEpisode],
    provenance: JSONObject,
) -> str:
    lines = [
        f"# Replay correction: `{target}`",
        "",
        _provenance_line(provenance),
        "",
        f"Records: `{source}` ({len(episodes)} episodes, "
        f"{sum(e.changed for e in episodes)} with a changed label). Each episode's actions "
        "were replayed on a fresh world and scored after the session by the target's "
        "correct (repaired) oracle. Intervals: task-clustered percentile bootstrap.",
        "",
    ]
    rows = []
    for s in summary:
        level = round(s.before.level * 100)
        rows.append(
            [
                s.agent, s.measure, s.episodes, s.tasks,
                f"{s.passed_before} ({s.before.estimate:.1%} [{s.before.low:.1%}, {s.before.high:.1%}])",
                f"{s.passed_after} ({s.after.estimate:.1%} [{s.after.low:.1%}, {s.after.high:.1%}])",
                f"{s.delta.estimate:+.1%} [{s.delta.low:+.1%}, {s.delta.high:+.1%}]",
                f"{level}%",
            ]
        )  # fmt: skip
    lines += _table(
        ["agent", "measure", "episodes", "tasks", "passed before (rate, CI)",
         "passed after (rate, CI)", "change (CI)", "level"],
        rows,
    )  # fmt: skip
    return "\n".join(lines) + "\n"


def render_sensitivity_report(
    pack: str,
    rows: Sequence[SensitivityRow],
    headline: Sequence[HeadlineRow],
    provenance: JSONObject,
) -> str:
    lines = [
        f"# Oracle sensitivity: `{pack}`",
        "",
        _provenance_line(provenance),
        "",
        "Each known-bad trajectory is a scenario's reference with one invalidity planted. "
        "*Caught*: the verdict is not commit-valid. *Right reason*: the verdict names the "
        "invalidity (its failure code).",
        "",
        "## By invalidity",
        "",
    ]
    summary = sensitivity_summary(rows)
    header = ["invalidity", "how", "planted"]
    for rule in RULES:
        header += [f"caught ({rule.value})", f"right reason ({rule.value})"]
    table = []
    for entry in summary:
        inv = Invalidity(str(entry["invalidity"]))
        row: list[object] = [inv.value, inv.how, entry["planted"]]
        for rule in RULES:
            row += [entry[f"caught_{rule.value}"], entry[f"right_reason_{rule.value}"]]
        table.append(row)
    lines += _table(header, table)
    missed = [r for r in rows if r.applicable and not all(r.caught)]
    lines += ["", "## Missed by at least one rule", ""]
    if missed:
        lines += _table(
            ["scenario", "family", "temporal in focus", "invalidity", "note",
             *[f"caught ({rule.value})" for rule in RULES]],
            [
                [r.scenario_id, r.family, "yes" if r.temporal_in_focus else "no",
                 r.invalidity.value, r.note, *("yes" if c else "**no**" for c in r.caught)]
                for r in missed
            ],
        )  # fmt: skip
    else:
        lines += ["None."]
    wrong = [r for r in rows if r.applicable and all(r.caught) and not any(r.right_reason)]
    lines += ["", "## Caught, but not for the planted reason", ""]
    if wrong:
        lines += _table(
            ["scenario", "invalidity", "note", *[f"codes ({rule.value})" for rule in RULES]],
            [[r.scenario_id, r.invalidity.value, r.note, *(c or "(goal not met)" for c in r.codes)]
             for r in wrong],
        )  # fmt: skip
    else:
        lines += ["None."]
    lines += ["", "## Headline table under each rule", ""]
    lines += _table(
        ["profile", "rule", "n", "outcome", "policy-aware", "commit-valid",
         "verdicts changed vs v1", "stale findings"],
        [[h.profile, h.rule.value, h.n, h.outcome, h.policy_aware, h.commit_valid,
          h.verdicts_changed, h.stale_flagged] for h in headline],
    )  # fmt: skip
    return "\n".join(lines) + "\n"


# -- figure -------------------------------------------------------------------------------
def write_heatmap(audits: Sequence[TargetAudit], path: Path) -> Path:
    """One panel per target: oracle variants × checks; red = failed (detected)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    code = {CheckStatus.PASS: 0, CheckStatus.NOT_APPLICABLE: 1, CheckStatus.FAIL: 2}
    cmap = ListedColormap(["#f4f4f4", "#bdbdbd", "#c0392b"])
    n_rows = max(len(a.variants) for a in audits)
    fig, axes = plt.subplots(
        1, len(audits), figsize=(2.6 * len(audits) + 1, 0.22 * n_rows + 1.6), squeeze=False
    )
    for ax, a in zip(axes[0], audits, strict=True):
        grid = [[code[v.status(c)] for c in CheckId] for v in a.variants]
        ax.imshow(grid, cmap=cmap, vmin=0, vmax=2, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(CheckId)), [c.value for c in CheckId], rotation=90, fontsize=7)
        ax.set_yticks(range(len(a.variants)), [v.variant_id for v in a.variants], fontsize=7)
        ax.set_title(a.target, fontsize=9)
        ax.tick_params(length=0)
    fig.suptitle("checks that failed (red) per oracle variant; grey = not applicable", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path


# -- writers ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WrittenOutputs:
    """What a writer put in its folder."""

    directory: Path
    files: tuple[Path, ...]


def _manifest(
    out_dir: Path, files: Sequence[Path], provenance: JSONObject, extra: JSONObject
) -> Path:
    manifest: JSONObject = {
        **provenance,
        **extra,
        "files": {p.name: file_sha256(p) for p in sorted(files)},
    }
    path = out_dir / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def write_audit(
    audits: Sequence[TargetAudit], out_dir: Path, provenance: JSONObject, settings: JSONObject
) -> WrittenOutputs:
    """Tables, Markdown report, heat map and manifest for an audit run."""
    files = [write_rows(t, rows, out_dir) for t, rows in audit_rows(audits).items()]
    report = out_dir / REPORT_FILE
    report.write_text(render_audit_report(audits, provenance))
    files += [report, write_heatmap(audits, out_dir / FIGURE_FILE)]
    files.append(_manifest(out_dir, files, provenance, {"settings": settings}))
    return WrittenOutputs(out_dir, tuple(files))


def write_tables_and_report(
    tables: dict[AuditTable, list[dict[str, Any]]],
    report_name: str,
    report: str,
    out_dir: Path,
    provenance: JSONObject,
    settings: JSONObject,
) -> WrittenOutputs:
    """Tables plus one Markdown report plus a manifest (correction, sensitivity)."""
    files = [write_rows(t, rows, out_dir) for t, rows in tables.items()]
    path = out_dir / report_name
    path.write_text(report)
    files.append(path)
    files.append(_manifest(out_dir, files, provenance, {"settings": settings}))
    return WrittenOutputs(out_dir, tuple(files))
