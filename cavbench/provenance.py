"""What made an artifact: package version, git commit, interpreter. No wall clock."""

from __future__ import annotations

import platform
import subprocess
from functools import cache
from pathlib import Path

import cavbench


@cache
def git_commit() -> str | None:
    """The commit of the cavbench source tree, or None when not running from a checkout."""
    here = Path(cavbench.__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment_facts() -> dict[str, str | None]:
    return {
        "cavbench_version": cavbench.__version__,
        "git_commit": git_commit(),
        "python_version": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
