"""`python -m pipelines.paper`: regenerate from frozen artifacts, and `--check` it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines import paper

REPO_ROOT = Path(__file__).resolve().parents[2]
FROZEN = REPO_ROOT / "artifacts" / "ablation"
COMMITTED = REPO_ROOT / "artifacts" / "paper"


@pytest.fixture(scope="module")
def regenerated(artifacts_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("paper") / "paper"
    paper.regenerate(artifacts_dir, out, verify=False)
    return out


def test_regenerates_figures_tables_and_manifest(regenerated: Path) -> None:
    figures = {p.name for p in (regenerated / "figures").iterdir()}
    for name in (
        "validity_gap",
        "osr_cvsr_dumbbell",
        "cvsr_vg_by_family",
        "cvsr_family_heatmap",
        "paired_differences",
        "dimension_fail_rates",
    ):
        assert {f"{name}.svg", f"{name}.pdf", f"{name}.png", f"{name}.csv"} <= figures
    for name in ("headline.md", "headline.tex", "metrics.csv", "contrasts.csv", "pass_k.csv"):
        assert (regenerated / name).is_file()
    manifest = json.loads((regenerated / paper.PAPER_MANIFEST).read_text(encoding="utf-8"))
    assert [i["path"] for i in manifest["inputs"]] == [
        "episodes.parquet",
        "manifest.json",
        "verdicts.parquet",
    ]
    assert len(manifest["outputs"]) == sum(1 for p in regenerated.rglob("*") if p.is_file()) - 1
    headline = (regenerated / "headline.md").read_text(encoding="utf-8")
    assert "ablation on core-v1" in headline
    assert "0.675 (27/40)" in headline


@pytest.mark.slow  # regenerates everything once more; CI runs `pipelines.paper --check` on the
# real artifacts, and the fast tests below check each verdict of the comparison
def test_check_passes_on_an_untouched_output(artifacts_dir: Path, regenerated: Path) -> None:
    report = paper.check(artifacts_dir, regenerated, verify=False)
    assert report.ok
    assert {f.verdict for f in report.files} == {paper.Verdict.IDENTICAL}


def test_check_refuses_unverified_inputs(
    artifacts_dir: Path, regenerated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Synthetic tables carry no cavbench manifest: the CLI refuses them (no traceback)."""
    assert (
        paper.main(["--artifacts", str(artifacts_dir), "--out", str(regenerated), "--check"]) == 1
    )
    assert "ERROR:" in capsys.readouterr().err


@pytest.fixture
def frozen_copy(tmp_path: Path) -> Path:
    if not (FROZEN / "manifest.json").is_file():
        pytest.skip("artifacts/ablation is not committed")
    return Path(shutil.copytree(FROZEN, tmp_path / "ablation"))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: _truncate(d / "events.parquet"), "events.parquet"),
        (lambda d: (d / "ledger.parquet").unlink(), "ledger.parquet is missing"),
        (lambda d: (d / "manifest.json").unlink(), "without a manifest.json"),
    ],
    ids=["truncated-events", "deleted-ledger", "lost-manifest"],
)
def test_check_verifies_inputs_by_checksum_first(
    frozen_copy: Path,
    damage: Callable[[Path], None],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    damage(frozen_copy)
    args = ["--artifacts", str(frozen_copy), "--out", str(COMMITTED), "--check"]
    assert paper.main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("ERROR:")
    assert message in err
    assert "Traceback" not in err


def test_a_changed_number_or_a_missing_file_fails_the_comparison(
    regenerated: Path, tmp_path: Path
) -> None:
    committed = tmp_path / "paper"
    shutil.copytree(regenerated, committed)
    csv = committed / "figures" / "validity_gap.csv"
    csv.write_text(csv.read_text(encoding="utf-8").replace("0.675", "0.676"), encoding="utf-8")
    (committed / "figures" / "dimension_fail_rates.svg").unlink()
    report = paper.compare_outputs(committed, regenerated)
    assert not report.ok
    verdicts = {f.path: f.verdict for f in report.files if not f.ok}
    assert verdicts == {
        "figures/validity_gap.csv": paper.Verdict.DIFFERENT,
        "figures/dimension_fail_rates.svg": paper.Verdict.MISSING,
    }


def test_a_binary_figure_whose_bytes_differ_passes_on_pixels_unless_strict(
    regenerated: Path, tmp_path: Path
) -> None:
    committed = tmp_path / "paper"
    shutil.copytree(regenerated, committed)
    pdf = committed / "figures" / "dimension_fail_rates.pdf"
    pdf.write_bytes(pdf.read_bytes() + b"% another build\n")
    report = paper.compare_outputs(committed, regenerated)
    assert report.ok
    verdicts = {f.path: f.verdict for f in report.files}
    assert verdicts["figures/dimension_fail_rates.pdf"] is paper.Verdict.WITHIN_TOLERANCE
    assert not paper.compare_outputs(committed, regenerated, strict=True).ok


def test_an_edited_svg_label_fails_without_strict(regenerated: Path, tmp_path: Path) -> None:
    committed = tmp_path / "paper"
    shutil.copytree(regenerated, committed)
    svg = committed / "figures" / "validity_gap.svg"
    text = svg.read_text(encoding="utf-8")
    assert ">Direct<" in text
    svg.write_text(text.replace(">Direct<", ">Dorect<", 1), encoding="utf-8")
    report = paper.compare_outputs(committed, regenerated)
    assert {f.path: f.verdict for f in report.files if not f.ok} == {
        "figures/validity_gap.svg": paper.Verdict.DIFFERENT,
        "figures/validity_gap.pdf": paper.Verdict.DIFFERENT,
        "figures/validity_gap.png": paper.Verdict.DIFFERENT,
    } or {f.path for f in report.files if not f.ok} == {"figures/validity_gap.svg"}


def test_a_png_beyond_the_pixel_tolerance_fails(regenerated: Path, tmp_path: Path) -> None:
    import matplotlib.image as mpimg

    committed = tmp_path / "paper"
    shutil.copytree(regenerated, committed)
    png = committed / "figures" / "dimension_fail_rates.png"
    pixels = mpimg.imread(png)
    pixels[: pixels.shape[0] // 2, :, :3] = 0.0
    mpimg.imsave(png, pixels)
    report = paper.compare_outputs(committed, regenerated)
    failed = {f.path for f in report.files if not f.ok}
    assert failed == {"figures/dimension_fail_rates.png"}


def test_manifest_parameters_must_match(regenerated: Path, tmp_path: Path) -> None:
    committed = tmp_path / "paper"
    shutil.copytree(regenerated, committed)
    manifest_path = committed / paper.PAPER_MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["parameters"]["seed"] = 1
    manifest["library_versions"]["matplotlib"] = "0.0"
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    report = paper.compare_outputs(committed, regenerated)
    assert {f.path for f in report.files if not f.ok} == {paper.PAPER_MANIFEST}
    assert any("library versions differ" in note for note in report.notes)


def test_check_without_a_committed_output_is_an_error(
    artifacts_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert paper.main(["--artifacts", str(artifacts_dir), "--out", str(tmp_path), "--check"]) == 1
    assert "nothing committed to check against" in capsys.readouterr().err


@pytest.mark.slow  # several seconds: CI runs it (.ci/run), the fast suite does not
def test_committed_paper_artifacts_reproduce() -> None:
    """CI: the committed figures and tables regenerate exactly from the frozen tables."""
    if not (FROZEN / "episodes.parquet").is_file():
        pytest.skip(
            f"{FROZEN.relative_to(REPO_ROOT)} is not there yet: the sweep's `collect` writes the "
            "frozen ablation tables; then run `python -m pipelines.paper` and commit artifacts/paper"
        )
    if not (COMMITTED / paper.PAPER_MANIFEST).is_file():
        pytest.skip(
            f"{COMMITTED.relative_to(REPO_ROOT)} is not committed yet: run "
            "`python -m pipelines.paper` and commit its output"
        )
    report = paper.check(FROZEN, COMMITTED)
    assert report.ok, [f for f in report.files if not f.ok]
