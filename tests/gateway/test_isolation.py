"""`import cavbench` (and the sweep, CLI and gateway core) import none of the gateway's extras."""

from __future__ import annotations

import subprocess
import sys

EXTRAS = ("starlette", "uvicorn", "httpx", "mcp", "langgraph")


def test_core_imports_load_no_extra() -> None:
    code = (
        "import sys, cavbench, cavbench.sweep, cavbench.cli, cavbench.gateway, "
        "cavbench.gateway.external\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {EXTRAS!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
    assert (
        "cavbench.gateway"
        not in subprocess.run(
            [sys.executable, "-c", "import sys, cavbench; print(list(sys.modules))"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    )
