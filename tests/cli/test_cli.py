"""The `cavbench` command line (SPEC f), driven in-process with `main([...])`, plus one
smoke test of the installed entry point."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import cavbench
from cavbench.cli import main
from cavbench.scenarios import builtin_pack_ids

PROFILES = ["direct", "policy_gated", "commit_guarded", "reconciled", "full_lifecycle"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def dev(dev_pack_dir: Path) -> str:
    return str(dev_pack_dir)


# -- global options, validate, list ----------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"cavbench {cavbench.__version__}\n"


def test_a_subcommand_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_validate_dev_pack(
    capsys: pytest.CaptureFixture[str], dev: str, dev_pack_digest: str
) -> None:
    for argv in (["validate", dev], ["validate", "--pack", dev]):
        code, out, err = cli(capsys, *argv)
        assert code == 0, err
        assert out == (
            f"OK: pack 'framework-v1' v1.0.0 -- 4 scenarios valid, digest {dev_pack_digest}\n"
        )


def test_validate_broken_pack(
    capsys: pytest.CaptureFixture[str], dev_pack_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(dev_pack_dir, broken)
    target = broken / "scenarios" / "FA-01.json"
    doc = json.loads(target.read_text(encoding="utf-8"))
    doc["plan"]["steps"][1]["kind"] = "fly"
    target.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    code, out, err = cli(capsys, "validate", str(broken))
    assert code == 1
    assert out == ""
    assert err.startswith(f"ERROR: {target}: at $.plan.steps[1].kind: Input should be 'read'")
    assert err.count("\n") == 1


def test_validate_unknown_pack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "validate", str(tmp_path / "nowhere"))
    assert code == 1
    assert err.startswith("ERROR: ")
    assert "nowhere" in err


def test_list_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "list", "profiles") == (0, "\n".join(PROFILES) + "\n", "")


def test_list_scenarios(
    capsys: pytest.CaptureFixture[str], dev: str, dev_docs: dict[str, Any]
) -> None:
    code, out, _ = cli(capsys, "list", "scenarios", "--pack", dev)
    assert code == 0
    assert out.splitlines() == [
        f"{sid}\t{doc['family']}\t{doc['title']}" for sid, doc in sorted(dev_docs.items())
    ]


def test_list_packs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "list", "packs")
    assert code == 0
    assert out.splitlines() == list(builtin_pack_ids())
    assert {"core-v1", "mock"} <= set(out.splitlines())


# -- run and its threshold ---------------------------------------------------------------------------


def run(
    capsys: pytest.CaptureFixture[str], dev: str, out_dir: Path, *extra: str
) -> tuple[int, str, str]:
    return cli(capsys, "run", "--pack", dev, "--output", str(out_dir), *extra)


def test_run_prints_the_rates(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, out, _ = run(capsys, dev, tmp_path, "--profile", "full_lifecycle")
    assert code == 0
    assert out == "OSR=1.000 PAOSR=0.750 CVSR=0.750 VG=0.250\n"
    assert [p.name for p in tmp_path.iterdir()] == ["full_lifecycle-framework-v1-seed0"]


@pytest.mark.parametrize("threshold", ["1.5", "-0.1", "1.0001"])
def test_threshold_outside_the_unit_interval(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path, threshold: str
) -> None:
    code, out, err = run(capsys, dev, tmp_path, "--fail-on-cvsr-below", threshold)
    assert code == 1
    assert err == f"ERROR: --fail-on-cvsr-below must be between 0 and 1, got {float(threshold)}\n"
    assert out == ""
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_threshold_below_fails_with_exit_2(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path
) -> None:
    code, out, err = run(
        capsys, dev, tmp_path, "--profile", "full_lifecycle", "--fail-on-cvsr-below", "0.7501"
    )
    assert code == 2
    assert "THRESHOLD FAILED: CVSR 0.750 < 0.750" in err
    assert out == "OSR=1.000 PAOSR=0.750 CVSR=0.750 VG=0.250\n"
    assert (
        tmp_path / "full_lifecycle-framework-v1-seed0" / "summary.json"
    ).is_file()  # written first


@pytest.mark.parametrize(
    ("profile", "threshold"), [("full_lifecycle", "0.75"), ("direct", "0"), ("reconciled", "0.5")]
)
def test_threshold_equality_passes(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path, profile: str, threshold: str
) -> None:
    code, _, err = run(
        capsys, dev, tmp_path, "--profile", profile, "--fail-on-cvsr-below", threshold
    )
    assert code == 0, err
    assert "THRESHOLD" not in err


def test_threshold_one_fails_anything_short_of_perfect(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, dev, tmp_path, "--profile", "full_lifecycle", "--fail-on-cvsr-below", "1"
    )
    assert code == 2
    assert "THRESHOLD FAILED: CVSR 0.750 < 1.000" in err


def test_unknown_scenario(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, out, err = run(capsys, dev, tmp_path, "--scenario", "FA-01", "--scenario", "NOPE")
    assert code == 1
    assert err == "ERROR: Unknown scenario id(s) for pack 'framework-v1': ['NOPE']\n"
    assert out == ""


def test_unknown_family(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, _, err = run(capsys, dev, tmp_path, "--family", "bogus")
    assert code == 1
    assert err.startswith("ERROR: Unknown family filter(s): ['bogus']")


def test_family_selecting_nothing(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path
) -> None:
    code, _, err = run(capsys, dev, tmp_path, "--family", "stable_happy_path")
    assert code == 1
    assert err == "ERROR: No scenarios selected for this run\n"


def test_family_filter(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, _, _ = run(capsys, dev, tmp_path, "--family", "execution_recovery")
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["overall"]["n"] == 2


def test_duplicated_scenario_is_counted_once(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path
) -> None:
    code, _out, _ = run(
        capsys, dev, tmp_path, "--scenario", "FA-01", "--scenario", "FA-01", "--scenario", "FA-02"
    )
    assert code == 0
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["overall"]["n"] == 2
    lines = (run_dir / "evaluations.jsonl").read_text().splitlines()
    assert [json.loads(line)["scenario_id"] for line in lines] == ["FA-01", "FA-02"]
    assert len((run_dir / "traces.jsonl").read_text().splitlines()) == 2
    # the same selection in another order or multiplicity names the same run
    run(capsys, dev, tmp_path, "--scenario", "FA-02", "--scenario", "FA-01")
    assert [p.name for p in tmp_path.iterdir()] == [run_dir.name]


def test_run_ids_are_deterministic_and_reruns_leave_nothing_stale(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path
) -> None:
    assert run(capsys, dev, tmp_path, "--seed", "3")[0] == 0
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name == "direct-framework-v1-seed3"
    first = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    (run_dir / "stale-trace.json").write_text("{}", encoding="utf-8")
    assert run(capsys, dev, tmp_path, "--seed", "3")[0] == 0
    assert [p.name for p in tmp_path.iterdir()] == [run_dir.name]  # no temp or backup dirs left
    second = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    assert second == first  # same files, same bytes, the stale file gone
    manifest = json.loads(first["manifest.json"])
    assert manifest["run_id"] == run_dir.name
    assert "started_at" not in manifest  # no clock in results


# -- ablate ------------------------------------------------------------------------------------------


def conformance_module(path: Path) -> ModuleType:
    if not path.is_file():
        pytest.skip(f"conformance script not found at {path}")
    spec = importlib.util.spec_from_file_location("cavbench_conformance", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ablate_csv_matches_the_reference_verdicts(
    capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path, shared_paths: dict[str, Path]
) -> None:
    code, out, _ = cli(
        capsys, "ablate", "--pack", dev, "--format", "csv", "--output", str(tmp_path / "abl")
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 20
    assert {(r["scenario_id"], r["profile"]) for r in rows} == {
        (f"FA-0{i}", p) for i in range(1, 5) for p in PROFILES
    }
    conformance = conformance_module(shared_paths["conformance"])
    got = tmp_path / "got.csv"
    got.write_text(out, encoding="utf-8")
    columns, expected = conformance.load(str(shared_paths["expected_csv"]))
    _, ours = conformance.load(str(got))
    assert len(expected) == 20
    for key, want in expected.items():
        have = ours[key]
        diffs = {
            c: (want[c], have.get(c))
            for c in columns
            if conformance.norm(c, want[c]) != conformance.norm(c, have.get(c))
        }
        assert diffs == {}, key
    assert conformance.main(["conformance.py", str(shared_paths["expected_csv"]), str(got)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "20 passed, 0 failed"


def test_ablate_json(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys, "ablate", "--pack", dev, "--format", "json", "--output", str(tmp_path / "abl")
    )
    assert code == 0
    data = json.loads(out)
    assert list(data) == PROFILES  # the canonical profile order, not alphabetical
    counts = {p: data[p]["counts"] for p in PROFILES}
    assert {
        p: (c["n"], c["outcome"], c["policy_aware"], c["commit_valid"]) for p, c in counts.items()
    } == {
        "direct": (4, 4, 3, 0),
        "policy_gated": (4, 4, 3, 0),
        "commit_guarded": (4, 4, 3, 1),
        "reconciled": (4, 4, 3, 2),
        "full_lifecycle": (4, 4, 3, 3),
    }
    assert data["reconciled"]["overall"] == {
        "n": 4,
        "OSR": 1.0,
        "PAOSR": 0.75,
        "CVSR": 0.5,
        "VG": 0.5,
        "PAVG": 0.25,
    }
    assert all(len(data[p]["episodes"]) == 4 for p in PROFILES)


def test_ablate_table(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> None:
    code, out, _ = cli(capsys, "ablate", "--pack", dev, "--output", str(tmp_path / "abl"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:7] == ["profile", "n", "OSR", "PAOSR", "CVSR", "VG", "PAVG"]
    assert [line.split()[0] for line in lines[2:]] == PROFILES
    assert lines[-1].split()[:5] == ["full_lifecycle", "4", "1.000", "0.750", "0.750"]


# -- replay and report -------------------------------------------------------------------------------


@pytest.fixture
def ablation(capsys: pytest.CaptureFixture[str], dev: str, tmp_path: Path) -> Path:
    out = tmp_path / "abl"
    assert cli(capsys, "ablate", "--pack", dev, "--output", str(out))[0] == 0
    return out


def test_replay_of_an_ablation_rescoring_everything(
    capsys: pytest.CaptureFixture[str], ablation: Path
) -> None:
    code, out, err = cli(capsys, "replay", str(ablation))
    assert (code, out, err) == (0, "20 episodes re-scored, 0 differ\n", "")


def test_replay_under_another_rule_reports_differences(
    capsys: pytest.CaptureFixture[str], ablation: Path
) -> None:
    code, out, err = cli(capsys, "replay", str(ablation), "--rule", "v1_strict")
    # v1_strict: stale commits where temporal validity is not in focus (FA-02), and success
    # claimed where recovery is not required although findings exist (FA-01, FA-04)
    assert (code, out) == (1, "20 episodes re-scored, 9 differ\n")
    assert err.splitlines() == [
        "DIFF commit_guarded-framework-v1-seed0 FA-04",
        "DIFF direct-framework-v1-seed0 FA-01",
        "DIFF direct-framework-v1-seed0 FA-02",
        "DIFF direct-framework-v1-seed0 FA-04",
        "DIFF full_lifecycle-framework-v1-seed0 FA-04",
        "DIFF policy_gated-framework-v1-seed0 FA-01",
        "DIFF policy_gated-framework-v1-seed0 FA-02",
        "DIFF policy_gated-framework-v1-seed0 FA-04",
        "DIFF reconciled-framework-v1-seed0 FA-04",
    ]


def test_replay_of_a_tampered_evaluation_reports_it(
    capsys: pytest.CaptureFixture[str], ablation: Path
) -> None:
    evaluations = ablation / "direct-framework-v1-seed0" / "evaluations.jsonl"
    lines = evaluations.read_text().splitlines()
    first = json.loads(lines[0])
    first["commit_valid_success"] = not first["commit_valid_success"]
    lines[0] = json.dumps(first, sort_keys=True)
    evaluations.write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, "replay", str(ablation))
    assert code == 1
    assert out == "20 episodes re-scored, 1 differ\n"
    assert err == "DIFF direct-framework-v1-seed0 FA-01\n"


def test_replay_of_a_tampered_trace_reports_it(
    capsys: pytest.CaptureFixture[str], ablation: Path
) -> None:
    traces = ablation / "full_lifecycle-framework-v1-seed0" / "traces.jsonl"
    records = [json.loads(line) for line in traces.read_text().splitlines()]
    fa02 = next(r for r in records if r["scenario_id"] == "FA-02")
    fa02["side_effects"] = fa02["side_effects"] * 2  # a forged duplicate effect
    traces.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    code, out, err = cli(capsys, "replay", str(ablation))
    assert (code, out) == (1, "20 episodes re-scored, 1 differ\n")
    assert err == "DIFF full_lifecycle-framework-v1-seed0 FA-02\n"


def test_replay_of_one_trace_file(
    capsys: pytest.CaptureFixture[str], ablation: Path, dev: str, tmp_path: Path
) -> None:
    run_dir = ablation / "reconciled-framework-v1-seed0"
    trace = json.loads((run_dir / "traces.jsonl").read_text().splitlines()[2])
    recorded = json.loads((run_dir / "evaluations.jsonl").read_text().splitlines()[2])
    single = tmp_path / "one-trace.json"
    single.write_text(json.dumps(trace), encoding="utf-8")
    code, out, _ = cli(capsys, "replay", str(single), "--pack", dev)
    assert code == 0
    assert json.loads(out) == recorded
    code, _, err = cli(capsys, "replay", str(single), "--pack", dev, "--scenario", "FA-01")
    assert code == 1  # a trace is not re-scored as another scenario
    assert err.startswith("ERROR: ")


def test_report_on_an_ablation_directory(
    capsys: pytest.CaptureFixture[str], ablation: Path
) -> None:
    code, out, _ = cli(capsys, "report", str(ablation), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == [f"{p}-framework-v1-seed0" for p in PROFILES]
    assert data["full_lifecycle-framework-v1-seed0"]["overall"]["CVSR"] == 0.75
    code, out, _ = cli(capsys, "report", str(ablation))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["run", "n", "OSR", "PAOSR", "CVSR", "VG", "PAVG"]
    assert [line.split()[0] for line in lines[2:]] == [f"{p}-framework-v1-seed0" for p in PROFILES]
    assert lines[-1].split()[1:] == ["4", "1.000", "0.750", "0.750", "0.250", "0.000"]
    assert max(len(line) for line in lines) <= 80


def test_validate_on_a_missing_folder_names_no_flag_it_does_not_take(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(capsys, "validate", str(tmp_path / "nowhere"))
    assert code == 1
    assert "--pack" not in err
    assert f"pack '{tmp_path / 'nowhere'}': neither a built-in pack" in err


USER_ADAPTER = """
from cavbench.adapters import baseline


class Mine:
    name = "mine"
    version = "1.0"

    def __init__(self):
        self.inner = baseline("reconciled")

    def run(self, session):
        return self.inner.run(session)


def make():
    return Mine()


def broken():
    return 42
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_agents_cli12.py").write_text(USER_ADAPTER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    return tmp_path


def test_run_and_ablate_take_a_custom_adapter(
    capsys: pytest.CaptureFixture[str], dev: str, user_module: Path
) -> None:
    code, out, err = cli(
        capsys, "run", "--pack", dev, "--adapter", "my_agents_cli12:make", "--output", "r"
    )
    assert code == 0, err
    assert (user_module / "r" / "mine-framework-v1-seed0" / "summary.json").is_file()
    code, out, err = cli(
        capsys, "ablate", "--pack", dev, "--adapter", "my_agents_cli12:make", "--output", "a"
    )
    assert code == 0, err
    rows = [line.split()[0] for line in out.splitlines()[2:]]
    assert rows == [*PROFILES, "mine"]
    reconciled = next(line for line in out.splitlines() if line.startswith("reconciled "))
    mine = next(line for line in out.splitlines() if line.startswith("mine "))
    assert mine.split()[1:] == reconciled.split()[1:]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("my_agents_cli12", "expected MODULE:FACTORY"),
        ("no_such_module_12:make", "cannot import 'no_such_module_12'"),
        ("my_agents_cli12:nothing", "has no callable 'nothing'"),
        ("my_agents_cli12:broken", "returned int, which lacks name/version/run"),
    ],
)
def test_a_bad_adapter_spec_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], dev: str, user_module: Path, spec: str, message: str
) -> None:
    code, _, err = cli(capsys, "run", "--pack", dev, "--adapter", spec, "--output", "r")
    assert code == 1
    assert err.startswith("ERROR: ")
    assert message in err


# -- the installed entry point -----------------------------------------------------------------------


@pytest.mark.slow
def test_installed_entry_point(dev: str, dev_pack_digest: str) -> None:
    exe = shutil.which("cavbench")
    if exe is None:
        pytest.skip("the cavbench entry point is not installed (pip install -e .)")
    version = subprocess.run(
        [exe, "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert (version.returncode, version.stdout) == (0, f"cavbench {cavbench.__version__}\n")
    done = subprocess.run(
        [exe, "validate", dev], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout
        == f"OK: pack 'framework-v1' v1.0.0 -- 4 scenarios valid, digest {dev_pack_digest}\n"
    )


def test_schema_command_prints_the_generated_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from cavbench.scenarios import scenario_json_schema

    code, out, _ = cli(capsys, "schema")
    assert code == 0
    assert json.loads(out) == scenario_json_schema()
    assert json.loads(out)["$schema"] == "https://json-schema.org/draft/2020-12/schema"
