"""The protocol, kit and checks know nothing of cavbench's runtime; nor does the example."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ROOT / "cavbench" / "audit"
RUNTIME_FREE = (
    "_protocol", "_vocab", "_kit", "_checks", "_defects", "_audit", "_spec", "_load",
    "targets/__init__", "targets/retail", "targets/network", "_replay", "_bootstrap", "_tables",
)  # fmt: skip
ALLOWED = ("cavbench.errors", "cavbench.audit")


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_protocol_level_modules_import_no_cavbench_runtime() -> None:
    for name in RUNTIME_FREE:
        ours = {
            m
            for m in _imports(AUDIT / f"{name}.py", top_level_only=True)
            if m.startswith("cavbench")
        }
        assert all(m.startswith(ALLOWED) for m in ours), (name, ours)
        assert "cavbench.audit.targets.v1" not in ours


def test_the_protocol_module_imports_only_the_standard_library_and_errors() -> None:
    ours = {
        m
        for m in _imports(AUDIT / "_protocol.py", top_level_only=False)
        if m.startswith("cavbench")
    }
    assert ours == {"cavbench.errors"}


def test_the_example_target_uses_only_the_audit_records() -> None:
    ours = {
        m
        for m in _imports(ROOT / "examples" / "calendar_audit.py", top_level_only=False)
        if m.startswith("cavbench")
    }
    assert ours == {"cavbench.audit"}
    bench = _imports(ROOT / "examples" / "calendar_bench" / "__init__.py", top_level_only=False)
    assert not {m for m in bench if m.startswith("cavbench")}
