"""`load_target` says what failed: the module missing, an import inside it, a crash in it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cavbench.audit import AuditError, StateView, load_target
from cavbench.cli import main


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("mybench")]:
        del sys.modules[name]


def test_a_missing_module_gets_the_path_hint(user_dir: Path) -> None:
    with pytest.raises(AuditError, match=r"cannot find module 'mybench_nowhere'.*PYTHONPATH"):
        load_target("mybench_nowhere:make")


def test_a_failing_import_inside_the_module_names_the_import_and_the_line(
    user_dir: Path,
) -> None:
    pkg = user_dir / "mybench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "target.py").write_text("import os\nfrom mybench import grader\n")
    (pkg / "grader.py").write_text("x = 1\nimport tau_bench_not_installed\n")
    with pytest.raises(AuditError) as err:
        load_target("mybench.target:make")
    text = str(err.value)
    assert "module 'mybench.target' was found, but an import inside it failed" in text
    assert "No module named 'tau_bench_not_installed'" in text
    assert f"{pkg / 'grader.py'}:2 in <module>: import tau_bench_not_installed" in text
    assert f"{pkg / 'target.py'}:2" in text
    assert "PYTHONPATH is not the problem" in text


def test_a_syntax_error_and_a_crashing_factory_are_reported_with_frames(user_dir: Path) -> None:
    (user_dir / "mybench_syntax.py").write_text("def make(:\n    pass\n")
    with pytest.raises(AuditError, match=r"(?s)raised SyntaxError.*mybench_syntax.py:1: def make"):
        load_target("mybench_syntax:make")
    (user_dir / "mybench_crash.py").write_text("def make():\n    return {}['db']\n")
    with pytest.raises(AuditError) as err:
        load_target("mybench_crash:make")
    assert "calling make() raised KeyError: 'db'" in str(err.value)
    assert "mybench_crash.py:2 in make" in str(err.value)


def test_the_cli_prints_it_and_exits_1(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (user_dir / "mybench_dep.py").write_text("import numpy\nimport not_a_dependency_xyz\n")
    assert main(["audit", "run", "--target", "mybench_dep:make", "--out", "o"]) == 1
    err = capsys.readouterr().err
    assert "an import inside it failed" in err
    assert "not_a_dependency_xyz" in err


def test_quiet_prints_only_the_overall_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["audit", "run", "--target", "v1/mock", "--defects", "D2", "--quiet", "--jobs", "1"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("audit PASS: 1 target(s)")
    assert "defect classes detected 1/1; 0 problem(s)" in lines[0]


def test_progress_goes_to_stderr_by_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["audit", "run", "--target", "v1/mock", "--defects", "D2", "--jobs", "2"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    for stage in (
        "[audit] load targets: v1/mock",
        "v1/mock: 5/5 oracle variants",
        "[audit] checks:",
    ):
        assert stage in err
    assert "in 2 process(es)" in err
    assert "[audit] tables, report, figure: 7 files" in err


def test_state_view_reads_without_copying_and_refuses_writes() -> None:
    data = {"orders": {"o1": {"items": [1, 2]}}}
    view = StateView(data)  # type: ignore[arg-type]
    assert view == data
    assert view["orders"]["o1"]["items"][1] == 2
    with pytest.raises(TypeError):
        view["orders"] = {}  # type: ignore[index]
    thawed = view.thaw()
    thawed["orders"] = {}
    assert data["orders"]
    assert view.digest() == StateView(dict(data)).digest()
    data["orders"]["o1"]["items"].append(3)
    assert len(view["orders"]["o1"]["items"]) == 3  # type: ignore[index]  # a view, not a copy


def test_worker_processes_give_the_same_audit_as_one_process() -> None:
    from cavbench.audit import select_variants
    from cavbench.audit._run import AuditJob, run_audits

    jobs = [
        AuditJob("v1/mock", None, 0, 8),
        AuditJob("network", ("net-01", "net-02", "net-03"), 0, 8),
    ]
    defects = select_variants("D2,D6")
    one = run_audits(jobs, defects, jobs=1)
    two = run_audits(jobs, defects, jobs=2)
    assert one == two
    assert [len(a.variants) for a in one] == [8, 8]
