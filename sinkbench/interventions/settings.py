"""The interventions' named choices and defaults, torch-free so that ``sinkbench --help`` stays instant: the
paper's merge settings (F.4) and its channel-ablation norms (D.3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sinkbench.errors import UserError

#: The norms the paper ablates, and K (D.3).
PAPER_NORMS = ("input_layernorm", "q_norm", "k_norm")
DEFAULT_TOP_K = 10
#: Which ablations to run: each norm alone, and all chosen norms together.
ABLATION_SETTINGS = ("single", "joint")


@dataclass(frozen=True)
class MergeSetting:
    """One merge of the paper's sweep.

    Attributes:
        name: its name on the command line and in reports.
        title: the paper's wording.
        method: the mergekit method (or :mod:`.spectral`'s ``tsv`` / ``star``).
        parameters: the method's shared parameters.
        mix: for a linear mix, the VLM-LM's weight (the reference gets the rest); None for a task-vector merge.
    """

    name: str
    title: str
    method: str
    parameters: dict[str, float] = field(default_factory=dict)
    mix: float | None = None


#: The seven settings of F.4, in the paper's order.
MERGE_SETTINGS = (
    MergeSetting("mix_95_5", "Asymmetric mix: 95% VLM + 5% LLM", "linear", mix=0.95),
    MergeSetting("uniform", "Uniform averaging (model soup)", "linear", mix=0.5),
    MergeSetting(
        "task_arithmetic", "Task Arithmetic, lambda=1", "task_arithmetic", {"lambda": 1.0, "weight": 1.0}
    ),
    MergeSetting("tsv", "Task Singular Vectors (TSV), alpha=1", "tsv", {"alpha": 1.0}),
    MergeSetting("star", "STAR, eta=40%", "star", {"eta": 40.0}),
    MergeSetting(
        "ties", "TIES, density 0.2, lambda=1", "ties", {"density": 0.2, "lambda": 1.0, "weight": 1.0}
    ),
    MergeSetting(
        "dare", "DARE, mask rate 0.9, lambda=1", "dare_linear", {"density": 0.1, "lambda": 1.0, "weight": 1.0}
    ),
)
MERGE_SETTING_NAMES = tuple(setting.name for setting in MERGE_SETTINGS)


def merge_setting(name: str) -> MergeSetting:
    """The merge setting called ``name``.

    Raises:
        UserError: no such setting.
    """
    for candidate in MERGE_SETTINGS:
        if candidate.name == name:
            return candidate
    raise UserError(f"unknown merge setting {name!r}; choose from {', '.join(MERGE_SETTING_NAMES)}")
