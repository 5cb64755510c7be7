"""``cavbench audit``: run the oracle-integrity audit, list its parts, replay-correct records,
freeze records, and measure the ``v1`` evaluator's sensitivity.

Exit codes: 0 fine; 1 bad input (a :class:`~cavbench.errors.CavBenchError`); 2 the audit
gate failed (a correct oracle failed a check, or a whole defect class went undetected on a
target), so ``cavbench audit run`` can gate CI. An undetected single variant is reported,
not an error.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from cavbench.audit._audit import TargetAudit
from cavbench.audit._checks import CHECK_DOCS
from cavbench.audit._defects import DEFECT_CLASSES, DEFECT_VARIANTS, select_variants
from cavbench.audit._load import load_target
from cavbench.audit._protocol import AuditError, JSONObject
from cavbench.audit._replay import (
    Agent,
    read_records,
    record_episodes,
    replay_records,
    summarise,
    write_records,
)
from cavbench.audit._report import (
    CORRECTION_REPORT,
    SENSITIVITY_REPORT,
    correction_rows,
    render_correction_report,
    render_sensitivity_report,
    sensitivity_rows,
    write_audit,
    write_tables_and_report,
)
from cavbench.audit._run import AuditJob, Progress, default_jobs, run_audits
from cavbench.audit._spec import TargetSpec
from cavbench.audit._vocab import CheckId, CheckStatus, VariantKind
from cavbench.audit.targets import shipped_target_names

EXIT_OK: Final = 0
EXIT_GATE: Final = 2


def provenance() -> JSONObject:
    """What made an output: package version and git commit (no clock, no host)."""
    from cavbench.provenance import environment_facts

    facts = environment_facts()
    return {"cavbench_version": facts["cavbench_version"], "git_commit": facts["git_commit"]}


def _tasks_for(
    spec: TargetSpec, tasks: Sequence[str] | None, max_tasks: int | None
) -> list[str] | None:
    available = list(spec.correct().tasks())
    chosen = available
    if tasks:
        chosen = [t for t in tasks if t in available]
        if not chosen:
            raise AuditError(
                f"--tasks: target {spec.name} has none of {list(tasks)} "
                f"(fix: pass --target {spec.name} with its own task ids, e.g. {available[:3]})"
            )
    if max_tasks is not None:
        if max_tasks < 2:
            raise AuditError("--max-tasks must be at least 2 (INV-3 needs a pair of tasks)")
        chosen = chosen[:max_tasks]
    return None if chosen == available else chosen


def _summary_line(a: TargetAudit) -> str:
    classes = a.classes()
    injected = [v for v in a.variants if v.kind is VariantKind.INJECTED]
    ok = sum(r.status is CheckStatus.PASS for r in a.correct.results)
    which = "correct oracle" if a.injectable else "oracle"
    line = f"{a.target}: {a.tasks} tasks; {which} {ok}/8 checks pass"
    if classes:
        line += (
            f"; classes detected {sum(bool(s.detected) for s in classes)}/{len(classes)}"
            f"; variants {sum(v.detected for v in injected)}/{len(injected)}"
            f" (distinct behaviours {sum(s.detected_distinct for s in classes)}/"
            f"{sum(s.distinct for s in classes)})"
            f"; load-bearing {', '.join(a.load_bearing()) or 'none'}"
        )
    usable = ", ".join(
        f"{r.check} {r.usable_text}"
        for r in a.correct.results
        if r.check in _SELECTIVE and r.usable < r.universe
    )
    if usable:
        line += f"\n  checks usable on: {usable}"
    for v in a.variants:
        if v.kind is VariantKind.NATIVE_DEFECT:
            line += f"\n  shipped defect {v.variant_id} fails {', '.join(v.failed) or 'nothing'}"
    return line


_SELECTIVE: Final = (CheckId.INV_3, CheckId.INV_4, CheckId.INV_5, CheckId.CTL_2, CheckId.CTL_3)
"""Checks that apply only to some tasks (or pairs): their usable counts are shown."""


class _Stages:
    """Per-stage progress on stderr (stdout keeps the results): one line per stage with
    its time; within the audit stage, a line per target at each quarter of its variants
    (or a live line on a terminal). Silent under ``--quiet``."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._t0 = time.perf_counter()
        self._stage_start = self._t0
        self._shown: dict[str, int] = {}

    def _say(self, text: str, *, live: bool = False) -> None:
        if self.quiet:
            return
        if self.tty:
            sys.stderr.write(f"\r\033[K{text}" + ("" if live else "\n"))
        elif not live:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def start(self, name: str) -> None:
        self._stage_start = time.perf_counter()
        self._say(f"[audit] {name} …", live=True)

    def done(self, name: str, detail: str = "") -> None:
        seconds = time.perf_counter() - self._stage_start
        self._say(f"[audit] {name}: {detail + '; ' if detail else ''}{seconds:.1f} s")

    def variant(self, event: Progress) -> None:
        text = (
            f"[audit]   {event.target}: {event.done}/{event.total} oracle variants "
            f"({event.variant}), {event.seconds:.1f} s"
        )
        quarter = 4 * event.done // event.total
        if event.done == event.total or (
            not self.tty and quarter > self._shown.get(event.target, 0)
        ):
            self._shown[event.target] = quarter
            self._say(text)
        else:
            self._say(text, live=True)

    @property
    def total(self) -> float:
        return time.perf_counter() - self._t0


def cmd_run(args: argparse.Namespace) -> int:
    stages = _Stages(args.quiet)
    names = args.target or list(shipped_target_names())
    defects = select_variants(args.defects)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    stages.start("load targets")
    specs = [(name, load_target(name)) for name in names]
    if tasks:
        known = {t for _, spec in specs for t in spec.correct().tasks()}
        unknown = [t for t in tasks if t not in known]
        if unknown:
            raise AuditError(f"--tasks: no selected target holds {unknown}")
        if len(specs) > 1:  # each target audits the listed tasks it holds
            specs = [(n, s) for n, s in specs if set(tasks) & set(s.correct().tasks())]
    jobs = [
        AuditJob(name, _tuple(_tasks_for(spec, tasks, args.max_tasks)), args.seed, args.pairs)
        for name, spec in specs
    ]
    stages.done("load targets", ", ".join(spec.name for _, spec in specs))
    workers = args.jobs if args.jobs is not None else default_jobs()
    if workers < 1:
        raise AuditError(f"--jobs {workers}: must be at least 1")
    stages.start("checks")
    audits = run_audits(jobs, defects, jobs=workers, progress=stages.variant)
    runs = sum(r.runs for a in audits for v in a.variants for r in v.results)
    stages.done("checks", f"{runs:,} check runs in {workers} process(es)")
    settings: JSONObject = {
        "targets": [a.target for a in audits],
        "defects": [d.variant_id for d in defects],
        "tasks": list(tasks) if tasks else None,
        "max_tasks": args.max_tasks,
        "seed": args.seed,
        "pairs": args.pairs,
    }
    stages.start("tables, report, figure")
    written = write_audit(audits, Path(args.out), provenance(), settings)
    stages.done("tables, report, figure", f"{len(written.files)} files")
    problems: list[str] = []
    unchecked: list[str] = []
    for a in audits:
        problems += a.problems()
        unchecked += a.unchecked()
        if args.quiet:
            continue
        print(_summary_line(a))
        for finding in a.findings():
            print(f"  finding: {finding}")
    if not args.quiet:
        print(f"wrote {len(written.files)} files to {written.directory}")
    for u in unchecked:
        print(f"NOT CHECKED: {u}")
    for p in problems:
        print(f"AUDIT FAILED: {p}")
    print(_overall(audits, problems, unchecked, stages.total))
    return EXIT_GATE if problems else EXIT_OK


def _tuple(tasks: list[str] | None) -> tuple[str, ...] | None:
    return None if tasks is None else tuple(tasks)


def _overall(
    audits: Sequence[TargetAudit], problems: list[str], unchecked: list[str], seconds: float
) -> str:
    """The one line CI reads: PASS or FAIL, over how much, in how long."""
    classes = [s for a in audits for s in a.classes()]
    detected = sum(bool(s.detected) for s in classes)
    verdict = "FAIL" if problems else "PASS"
    line = (
        f"audit {verdict}: {len(audits)} target(s); correct oracles "
        f"{sum(not any(r.status is CheckStatus.FAIL for r in a.correct.results) for a in audits)}"
        f"/{len(audits)} clean"
    )
    if classes:
        line += f"; defect classes detected {detected}/{len(classes)}"
        if unchecked:
            line += f" ({len(unchecked)} could not be checked)"
    line += f"; {len(problems)} problem(s); {seconds:.1f} s"
    return line


def cmd_list(args: argparse.Namespace) -> int:
    print("targets:")
    for name in shipped_target_names():
        if args.quick:
            print(f"  {name}")
            continue
        spec = load_target(name)
        natives = ", ".join(v.variant_id for v in spec.natives)
        print(
            f"  {name}: {spec.description}" + (f" [shipped defects: {natives}]" if natives else "")
        )
    print("  module:attribute — your own target (see docs/audit.md)")
    print("checks:")
    for check in CheckId:
        print(f"  {check.value} ({check.covers}): {CHECK_DOCS[check]}")
    print("defect classes and variants:")
    for info in DEFECT_CLASSES:
        print(
            f"  {info.defect_class} {info.slug}: {info.change} (expected: {', '.join(info.expected)})"
        )
        for v in DEFECT_VARIANTS:
            if v.defect_class is info.defect_class:
                print(f"    {v.variant_id} {v.slug}: {v.description}")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    records = read_records(Path(args.records))
    spec = load_target(args.target)
    mismatched = sorted({r.target for r in records.records} - {spec.name})
    if mismatched:
        raise AuditError(
            f"{args.records}: records are for target(s) {mismatched}, not {spec.name} "
            "(fix: pass the records' own --target)"
        )
    episodes = replay_records(records.records, spec.correct)
    from cavbench.audit._replay import per_task

    tasks = per_task(episodes)
    summary = summarise(episodes, seed=args.seed, num_resamples=args.resamples)
    prov = provenance()
    tables = correction_rows(spec.name, episodes, tasks, summary, seed=args.seed)
    report = render_correction_report(spec.name, str(args.records), summary, episodes, prov)
    settings: JSONObject = {
        "target": spec.name,
        "records": str(args.records),
        "records_sha256": records.manifest.get("sha256"),
        "seed": args.seed,
        "resamples": args.resamples,
    }
    written = write_tables_and_report(
        tables, CORRECTION_REPORT, report, Path(args.out), prov, settings
    )
    for s in summary:
        if s.agent == "all" or s.measure == "success":
            print(
                f"{s.agent:>10} {s.measure:<14} before {s.passed_before}/{s.episodes} "
                f"({s.before.estimate:.1%}) after {s.passed_after}/{s.episodes} "
                f"({s.after.estimate:.1%}) change {s.delta.estimate:+.1%} "
                f"[{s.delta.low:+.1%}, {s.delta.high:+.1%}]"
            )
    print(f"wrote {len(written.files)} files to {written.directory}")
    return EXIT_OK


def cmd_record(args: argparse.Namespace) -> int:
    spec = load_target(args.target)
    variants = {v.variant_id: v for v in spec.natives}
    agents = _agents(args.agents)
    if args.oracle == "correct":
        factory = spec.correct
    elif args.oracle in variants:
        factory = variants[args.oracle].factory
    else:
        raise AuditError(
            f"--oracle {args.oracle!r}: target {spec.name} ships {['correct', *variants]}"
        )
    records = record_episodes(
        factory, target=spec.name, agents=agents, repetitions=args.repetitions, seed=args.seed
    )
    prov: JSONObject = {
        **provenance(),
        "target": spec.name,
        "oracle_at_recording": args.oracle,
        "scorer": "post-session: the closing action, then score() once more",
        "agents": [a.value for a in agents],
        "repetitions": args.repetitions,
        "seed": args.seed,
    }
    prov.pop("git_commit", None)  # frozen artifacts must not change with every commit
    path = write_records(records, Path(args.out), provenance=prov)
    print(f"wrote {len(records)} records ({args.oracle} oracle) and {path}")
    return EXIT_OK


def _agents(text: str) -> tuple[Agent, ...]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    known = [a.value for a in Agent]
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise AuditError(f"--agents {text!r}: unknown {bad} (fix: a comma list of {known})")
    return tuple(Agent(n) for n in dict.fromkeys(names))


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from cavbench.audit._sensitivity import headline, sensitivity, sensitivity_summary
    from cavbench.audit.targets.v1 import V1Domain
    from cavbench.scenarios import load_pack

    pack = load_pack(args.pack)
    rows = sensitivity(V1Domain(pack))
    heads = headline(pack)
    prov = provenance()
    report = render_sensitivity_report(pack.pack_id, rows, heads, prov)
    settings: JSONObject = {"pack": pack.pack_id, "pack_digest": pack.digest}
    written = write_tables_and_report(
        sensitivity_rows(rows, heads), SENSITIVITY_REPORT, report, Path(args.out), prov, settings
    )
    for entry in sensitivity_summary(rows):
        print(
            f"{entry['invalidity']:<26} planted {entry['planted']:>3}  caught v1 "
            f"{entry['caught_v1']:>3}  v1_strict {entry['caught_v1_strict']:>3}  "
            f"(right reason {entry['right_reason_v1']}/{entry['right_reason_v1_strict']})"
        )
    print(f"wrote {len(written.files)} files to {written.directory}")
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cavbench audit {run,list,replay,record,sensitivity}``."""
    audit = subparsers.add_parser("audit", help="oracle-integrity audit (see docs/audit.md)")
    sub = audit.add_subparsers(dest="audit_command", required=True)

    p = sub.add_parser("run", help="run the eight checks on every oracle variant of the targets")
    p.add_argument(
        "--target",
        action="append",
        help="a shipped target (see `audit list`) or module:attribute; repeatable; "
        "default: every shipped target",
    )
    p.add_argument(
        "--defects",
        default="all",
        help="all, none, or a comma list of classes (D1) and variants (D3b); default all",
    )
    p.add_argument("--tasks", default=None, help="comma-separated task ids to audit")
    p.add_argument("--max-tasks", type=int, default=None, help="audit only the first N tasks")
    p.add_argument("--pairs", type=int, default=8, help="task pairs for INV-3 (default 8)")
    p.add_argument("--seed", type=int, default=0, help="seed for the INV-3 pairing (default 0)")
    p.add_argument("--out", required=True, help="output folder (tables, report, figure)")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="worker processes over oracle variants (default: usable CPUs, at most 4; "
        "1 runs in this process)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="for CI: no progress, no per-target summary; only problems and the overall line",
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("list", help="show targets, checks and defect variants")
    p.add_argument("--quick", action="store_true", help="target names only (no loading)")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("replay", help="replay-correct frozen episode records")
    p.add_argument("records", help="a records folder (episodes.jsonl + manifest.json) or a .jsonl")
    p.add_argument("--target", required=True, help="the target the records were made on")
    p.add_argument("--out", required=True, help="output folder for the correction tables")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("record", help="freeze scripted-agent episode records on a target")
    p.add_argument("--target", required=True)
    p.add_argument(
        "--oracle",
        default="correct",
        help="which oracle labels the episodes: correct (default) or one the target ships "
        "(retail: defective)",
    )
    p.add_argument(
        "--agents",
        default=",".join(a.value for a in Agent),
        help=f"comma list of scripted agents to record (default: {','.join(a.value for a in Agent)})",
    )
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("sensitivity", help="known-bad trajectories scored by v1 and v1_strict")
    p.add_argument("--pack", default="core-v1")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_sensitivity)
