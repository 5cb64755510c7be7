"""cavbench: does an agent's consequential action stay valid at the moment it commits?

The top level re-exports the nouns and verbs most users need; everything else lives in
`cavbench.scenarios`, `cavbench.runtime`, `cavbench.adapters`, `cavbench.evaluation`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cavbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

from cavbench.adapters import AdapterResult, ExecutionAdapter, Profile, baseline
from cavbench.errors import CavBenchError
from cavbench.evaluation import ScoringRule, Verdict, evaluate, summarize
from cavbench.runner import Episode, replay, run_episode, run_episodes
from cavbench.runtime import AdapterSession, ToolResult, ToolStatus
from cavbench.scenarios import Scenario, ScenarioPack, ScenarioView, load_pack
from cavbench.trace import EpisodeTrace

__all__ = [
    "AdapterResult",
    "AdapterSession",
    "CavBenchError",
    "Episode",
    "EpisodeTrace",
    "ExecutionAdapter",
    "Profile",
    "Scenario",
    "ScenarioPack",
    "ScenarioView",
    "ScoringRule",
    "ToolResult",
    "ToolStatus",
    "Verdict",
    "__version__",
    "baseline",
    "evaluate",
    "load_pack",
    "replay",
    "run_episode",
    "run_episodes",
    "summarize",
]
