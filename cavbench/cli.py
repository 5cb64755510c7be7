"""The `cavbench` command line."""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib
import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cavbench
from cavbench.adapters import (
    BASELINE_PROFILES,
    ExecutionAdapter,
    Profile,
    baseline,
    load_adapter,
)
from cavbench.errors import CavBenchError, ConfigError, SelectionError
from cavbench.evaluation import RateCounts, ScoringRule, summarize
from cavbench.reports import RunInfo, read_run, run_dirs, write_ablation_summary, write_run
from cavbench.runner import Episode, replay, run_episodes, select, verdict_row
from cavbench.scenarios import (
    Family,
    ScenarioPack,
    builtin_pack_ids,
    lint_scenario,
    load_pack,
    scenario_json_schema,
)
from cavbench.trace import EpisodeTrace

EXIT_OK, EXIT_ERROR, EXIT_THRESHOLD = 0, 1, 2
# Modules that add subcommands; each exposes register(subparsers).
EXTENSIONS = ("cavbench.tables.cli", "cavbench.audit.cli", "pipelines.cli")
CSV_COLUMNS = (
    "scenario_id",
    "family",
    "profile",
    "outcome_success",
    "policy_aware_outcome_success",
    "commit_valid_success",
    "intent_grounding",
    "authority_validity",
    "temporal_state_validity",
    "execution_integrity",
    "outcome_recoverability",
    "failure_codes",
    "commit_count",
)
FAMILY_ABBREV = {
    Family.EXECUTION_RECOVERY: "ER",
    Family.INTENT_AUTHORITY: "IA",
    Family.STABLE_HAPPY_PATH: "HP",
    Family.STATE_MUTATION: "ST",
}


def _command(argv: Sequence[str]) -> str:
    return " ".join(["cavbench", *argv])


def _run_id(
    adapter: str,
    pack_id: str,
    seed: int,
    rule: ScoringRule,
    scenarios: Sequence[str],
    families: Sequence[str],
) -> str:
    """Deterministic: the same selection always names the same directory (no clock)."""
    rid = f"{adapter}-{pack_id}-seed{seed}"
    if rule is not ScoringRule.V1:
        rid += f"-{rule.value}"
    if scenarios or families:
        key = json.dumps([sorted(set(scenarios)), sorted(set(families))])
        rid += "-sel" + hashlib.sha256(key.encode()).hexdigest()[:8]
    return rid


@dataclass(frozen=True, slots=True)
class ProfileRun:
    run_id: str
    episodes: list[Episode]


def _profiles_run(
    args: argparse.Namespace,
    contenders: Sequence[tuple[str, ExecutionAdapter]],
    argv: Sequence[str],
) -> dict[str, ProfileRun]:
    """Run each (label, adapter) on the selected pack; label = profile or adapter name."""
    pack = load_pack(args.pack)
    rule = ScoringRule(args.rule)
    select(pack, args.scenario, args.family)  # fail fast on a bad selection
    out: dict[str, ProfileRun] = {}
    for label, adapter in contenders:
        run_id = _run_id(
            label, pack.pack_id, args.seed, rule, args.scenario or (), args.family or ()
        )
        episodes = run_episodes(
            pack,
            adapter,
            scenario_ids=args.scenario,
            families=args.family,
            seed=args.seed,
            rule=rule,
            run_id=run_id,
        )
        out[label] = ProfileRun(run_id, episodes)
        if args.output is not None:
            info = RunInfo(
                run_id, pack, adapter.name, adapter.version, args.seed, rule, _command(argv)
            )
            write_run(Path(args.output), info, episodes)
    return out


def _custom(args: argparse.Namespace) -> list[tuple[str, ExecutionAdapter]]:
    if not args.adapter:
        return []
    adapter = load_adapter(args.adapter)
    if str(adapter.name) in {p.value for p in BASELINE_PROFILES}:
        raise ConfigError(
            f"--adapter {args.adapter!r}: its name {adapter.name!r} is a baseline profile's "
            "(fix: give your adapter its own name)"
        )
    return [(str(adapter.name), adapter)]


def cmd_validate(args: argparse.Namespace) -> int:
    pack = load_pack(args.pack_arg or args.pack)
    warnings = [finding for scenario in pack.scenarios for finding in lint_scenario(scenario)]
    for finding in warnings:
        print(f"WARN: {finding}", file=sys.stderr)
    if warnings and args.strict:
        print(f"ERROR: {len(warnings)} semantic warning(s) and --strict", file=sys.stderr)
        return EXIT_ERROR
    print(
        f"OK: pack '{pack.pack_id}' v{pack.pack_version} -- {len(pack)} scenarios valid, digest {pack.digest}"
    )
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    if args.what == "profiles":
        print("\n".join(p.value for p in BASELINE_PROFILES))
    elif args.what == "packs":
        print("\n".join(builtin_pack_ids()))
    else:
        for s in load_pack(args.pack).scenarios:
            print(f"{s.id}\t{s.family.value}\t{s.title}")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    threshold = args.fail_on_cvsr_below
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"--fail-on-cvsr-below must be between 0 and 1, got {threshold}")
    contenders = _custom(args) or [(args.profile, baseline(Profile(args.profile)))]
    run = _profiles_run(args, contenders, argv)[contenders[0][0]]
    counts = summarize(e.verdict for e in run.episodes).overall
    if args.output is not None:
        print(
            f"Wrote run {run.run_id} to {(Path(args.output) / run.run_id).resolve()}",
            file=sys.stderr,
        )
    print(counts.line())
    if threshold is not None and round(counts.cvsr, 4) < threshold:
        print(f"THRESHOLD FAILED: CVSR {counts.cvsr:.3f} < {threshold:.3f}", file=sys.stderr)
        return EXIT_THRESHOLD
    return EXIT_OK


def _table(results: dict[str, list[Episode]]) -> str:
    """The headline table: rates per profile and CVSR per family."""
    families = sorted({e.scenario.family for eps in results.values() for e in eps})
    head = f"{'profile':<16} {'n':>4} {'OSR':>6} {'PAOSR':>6} {'CVSR':>6} {'VG':>6} {'PAVG':>6}"
    head += "".join(f" {'CVSR ' + FAMILY_ABBREV[f]:>8}" for f in families)
    lines = [head, "-" * len(head)]
    for profile, episodes in results.items():
        m = summarize(e.verdict for e in episodes)
        c = m.overall
        line = f"{profile:<16} {c.n:>4} {c.osr:>6.3f} {c.paosr:>6.3f} {c.cvsr:>6.3f} {c.vg:>6.3f} {c.pavg:>6.3f}"
        line += "".join(f" {m.by_family.get(f, RateCounts()).cvsr:>8.3f}" for f in families)
        lines.append(line)
    return "\n".join(lines)


def cmd_ablate(args: argparse.Namespace, argv: Sequence[str]) -> int:
    contenders = [(p.value, baseline(p)) for p in BASELINE_PROFILES] + _custom(args)
    runs = _profiles_run(args, contenders, argv)
    results = {p: r.episodes for p, r in runs.items()}  # canonical profile order, then yours
    if args.output is not None:
        write_ablation_summary(
            Path(args.output),
            {
                p: (r.run_id, summarize(e.verdict for e in r.episodes).overall)
                for p, r in runs.items()
            },
        )
        print(f"Wrote ablation to {Path(args.output).resolve()}", file=sys.stderr)
    if args.format == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for profile, episodes in results.items():
            for episode in episodes:
                row = verdict_row(episode, profile)
                writer.writerow(
                    {k: str(v).lower() if isinstance(v, bool) else v for k, v in row.items()}
                )
        sys.stdout.write(buf.getvalue())
    elif args.format == "json":
        data: dict[str, Any] = {}
        for profile, episodes in results.items():
            m = summarize(e.verdict for e in episodes)
            data[profile] = {
                "overall": m.overall.as_json(),
                "counts": {
                    "n": m.overall.n,
                    "outcome": m.overall.outcome,
                    "policy_aware": m.overall.policy_aware,
                    "commit_valid": m.overall.commit_valid,
                },
                "by_family": {f.value: c.as_json() for f, c in m.by_family.items()},
                "episodes": [verdict_row(e, profile) for e in episodes],
            }
        # Profiles in their canonical order (not alphabetical); keys inside each sorted.
        ordered = {p: json.loads(json.dumps(v, sort_keys=True)) for p, v in data.items()}
        print(json.dumps(ordered, indent=2))
    else:
        print(_table(results))
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    rule = ScoringRule(args.rule) if args.rule else None
    target = Path(args.target)
    if target.is_file():
        trace = EpisodeTrace.from_json(json.loads(target.read_text(encoding="utf-8")))
        if args.pack is None:
            raise ConfigError(f"{target}: replaying a single trace file needs --pack")
        pack = load_pack(args.pack)
        try:
            scenario = pack.get(args.scenario or trace.scenario_id)
        except KeyError:
            raise SelectionError(
                f"{target}: scenario {args.scenario or trace.scenario_id!r} is not in pack '{pack.pack_id}'"
            ) from None
        verdict = replay(scenario, trace, rule or ScoringRule.V1)
        print(json.dumps(verdict.as_json(), indent=2, sort_keys=True))
        return EXIT_OK
    total = differ = 0
    builtin = builtin_pack_ids()
    packs: dict[str, ScenarioPack] = {}  # an ablation's runs share one pack: load it once
    for run_dir in run_dirs(target):
        info, traces, recorded = read_run(run_dir)
        pack_ref = args.pack or info["scenario_pack"]["source"]
        if pack_ref not in packs:
            packs[pack_ref] = load_pack(pack_ref if pack_ref in builtin else Path(pack_ref))
        pack = packs[pack_ref]
        if pack.digest != info["scenario_pack"]["digest"]:
            raise CavBenchError(
                f"{run_dir}: pack digest {pack.digest} differs from the recorded "
                f"{info['scenario_pack']['digest']} (fix: pass --pack with the pack the run used)"
            )
        run_rule = rule or ScoringRule(info.get("scoring_rule", "v1"))
        by_id = {e["scenario_id"]: e for e in recorded}
        for trace in traces:
            total += 1
            again = replay(pack.get(trace.scenario_id), trace, run_rule).as_json()
            if again != by_id.get(trace.scenario_id):
                differ += 1
                print(f"DIFF {run_dir.name} {trace.scenario_id}", file=sys.stderr)
    print(f"{total} episodes re-scored, {differ} differ")
    return EXIT_OK if differ == 0 else EXIT_ERROR


def _report_order(name: str) -> tuple[int, str]:
    """Runs of an ablation in the canonical profile order, other runs after, by name."""
    for index, profile in enumerate(BASELINE_PROFILES):
        if name.startswith(profile.value + "-"):
            return index, name
    return len(BASELINE_PROFILES), name


def cmd_report(args: argparse.Namespace) -> int:
    """Print the metrics of a run directory, or of every run in an ablation directory."""
    target = Path(args.target)
    summaries: dict[str, Any] = {}
    for run_dir in sorted(run_dirs(target), key=lambda d: _report_order(d.name)):
        summary_file = run_dir / "summary.json"
        if not summary_file.is_file():
            raise CavBenchError(
                f"{summary_file} not found (fix: point at a directory written by `cavbench run` or `ablate`)"
            )
        summaries[run_dir.name] = json.loads(summary_file.read_text(encoding="utf-8"))["metrics"]
    if args.format == "json":
        print(json.dumps(summaries, indent=2))
        return EXIT_OK
    width = max(len("run"), *(len(name) for name in summaries))
    head = f"{'run':<{width}} {'n':>4} {'OSR':>6} {'PAOSR':>6} {'CVSR':>6} {'VG':>6} {'PAVG':>6}"
    lines = [head, "-" * len(head)]
    for name, metrics in summaries.items():
        o = metrics["overall"]
        lines.append(
            f"{name:<{width}} {o['n']:>4} {o['OSR']:>6.3f} {o['PAOSR']:>6.3f} "
            f"{o['CVSR']:>6.3f} {o['VG']:>6.3f} {o['PAVG']:>6.3f}"
        )
    print("\n".join(lines))
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the scenario-v1 JSON Schema generated from the model (for editors and CI)."""
    print(json.dumps(scenario_json_schema(), indent=2, sort_keys=True))
    return EXIT_OK


def _selection_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pack", default="core-v1", help="built-in pack id or a pack directory (default core-v1)"
    )
    p.add_argument("--scenario", action="append", help="scenario id (repeatable)")
    p.add_argument("--family", action="append", help="scenario family (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--adapter",
        default=None,
        metavar="MODULE:FACTORY",
        help="your own adapter: FACTORY() in MODULE returns an ExecutionAdapter (run: instead "
        "of --profile; ablate: beside the five profiles)",
    )
    p.add_argument(
        "--rule",
        default=ScoringRule.V1.value,
        choices=[r.value for r in ScoringRule],
        help="scoring rule (default v1, CAV-Bench compatible)",
    )


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cavbench", description=__doc__)
    parser.add_argument("--version", action="version", version=f"cavbench {cavbench.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="validate a scenario pack and print its digest")
    p.add_argument("pack_arg", nargs="?", metavar="PACK", help="built-in pack id or directory")
    p.add_argument("--pack", default="core-v1")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail on semantic warnings (unknown hooks, missing resources, dangling step ids)",
    )
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("list", help="list scenarios, profiles or built-in packs")
    p.add_argument("what", choices=["scenarios", "profiles", "packs"])
    p.add_argument("--pack", default="core-v1")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("run", help="run one profile on a pack")
    _selection_flags(p)
    p.add_argument("--profile", default=Profile.DIRECT.value, choices=[x.value for x in Profile])
    p.add_argument("--output", default="runs", help="where run directories go (default runs/)")
    p.add_argument(
        "--fail-on-cvsr-below",
        type=float,
        metavar="T",
        help="exit 2 when the overall CVSR is below T (0..1)",
    )
    p.set_defaults(func=lambda a: cmd_run(a, argv))

    p = sub.add_parser("ablate", help="run all five baseline profiles on a pack")
    _selection_flags(p)
    p.add_argument(
        "--output", default="runs/ablation", help="where to write (default runs/ablation)"
    )
    p.add_argument("--format", default="table", choices=["table", "csv", "json"])
    p.set_defaults(func=lambda a: cmd_ablate(a, argv))

    p = sub.add_parser("replay", help="re-score recorded episodes without re-running them")
    p.add_argument("target", help="a run or ablation directory, or one trace JSON file")
    p.add_argument(
        "--pack", default=None, help="pack to score against (default: the one the run recorded)"
    )
    p.add_argument("--scenario", default=None, help="scenario id for a single trace file")
    p.add_argument("--rule", default=None, choices=[r.value for r in ScoringRule])
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("schema", help="print the scenario-v1 JSON Schema generated from the model")
    p.set_defaults(func=cmd_schema)

    p = sub.add_parser("report", help="print the metrics of a run or ablation directory")
    p.add_argument("target", help="a run directory or an ablation directory")
    p.add_argument(
        "--format",
        default="table",
        choices=["table", "json"],
        help="a readable table (default) or the metrics as JSON",
    )
    p.set_defaults(func=cmd_report)

    for module_name in EXTENSIONS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    try:
        return int(args.func(args))
    except CavBenchError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `cavbench … | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
