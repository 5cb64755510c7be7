"""What made an artifact: package version, git commit, interpreter. No wall clock.

The git commit is cavbench's own, and only when cavbench runs from a cavbench checkout (the
package's parent folder is the top of a git work tree whose `pyproject.toml` names the
`cavbench` project). An installed cavbench that happens to sit inside a user's repository
(a virtualenv in their project) records no commit: that repository's HEAD says nothing
about the code that ran. A checkout with uncommitted changes to tracked files is `dirty`.
"""

from __future__ import annotations

import platform
import subprocess
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import cavbench

_PROJECT = "cavbench"


@dataclass(frozen=True, slots=True)
class GitState:
    """cavbench's own commit and whether tracked files differ from it."""

    commit: str
    dirty: bool


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def _is_cavbench_checkout(root: Path) -> bool:
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    return bool(project.get("project", {}).get("name") == _PROJECT)


@cache
def git_state(package_dir: Path | None = None) -> GitState | None:
    """cavbench's checkout state, or None when not running from a cavbench checkout."""
    here = (package_dir or Path(cavbench.__file__).parent).resolve()
    top = _git(here, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != here.parent:
        return None
    if not _is_cavbench_checkout(here.parent):
        return None
    head = _git(here, "rev-parse", "HEAD")
    status = _git(here, "status", "--porcelain", "--untracked-files=no")
    if not head or status is None:
        return None
    return GitState(commit=head.strip(), dirty=bool(status.strip()))


def git_commit() -> str | None:
    """The commit of the cavbench checkout that is running, or None (see the module doc)."""
    state = git_state()
    return None if state is None else state.commit


def environment_facts() -> dict[str, str | None]:
    """cavbench's version, its commit and dirty flag (checkout only), Python and platform."""
    state = git_state()
    return {
        "cavbench_version": cavbench.__version__,
        "git_commit": None if state is None else state.commit,
        "git_dirty": None if state is None else str(state.dirty).lower(),
        "python_version": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
