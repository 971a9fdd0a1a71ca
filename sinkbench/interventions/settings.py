"""The interventions' named choices, defaults and parameters, torch-free so that ``sinkbench --help`` stays instant:
the paper's merge settings (F.4), its channel-ablation norms (D.3), and each intervention's parameters (a dataclass
whose fields are the command's options, :func:`sinkbench.sink.options.option`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sinkbench.errors import UserError
from sinkbench.sink.options import option

#: The norms the paper ablates, and K (D.3).
PAPER_NORMS = ("input_layernorm", "q_norm", "k_norm")
DEFAULT_TOP_K = 10
#: Which ablations to run: each norm alone, and all chosen norms together.
ABLATION_SETTINGS = ("single", "joint")


@dataclass(frozen=True)
class MergeSetting:
    """One merge of the paper's sweep: its ``name`` (command line, reports), the paper's ``title``, the mergekit
    ``method`` (or :mod:`.spectral`'s ``tsv`` / ``star``) and its shared ``parameters``; ``mix``, for a linear mix,
    is the VLM-LM's weight (the reference gets the rest), None for a task-vector merge."""

    name: str
    title: str
    method: str
    parameters: dict[str, float] = field(default_factory=dict)
    mix: float | None = None


#: lambda = 1 and a unit weight per task vector, for Task Arithmetic, TIES and DARE.
_UNIT = {"lambda": 1.0, "weight": 1.0}
#: The seven settings of F.4, in the paper's order.
MERGE_SETTINGS = (
    MergeSetting("mix_95_5", "Asymmetric mix: 95% VLM + 5% LLM", "linear", mix=0.95),
    MergeSetting("uniform", "Uniform averaging (model soup)", "linear", mix=0.5),
    MergeSetting("task_arithmetic", "Task Arithmetic, lambda=1", "task_arithmetic", {**_UNIT}),
    MergeSetting("tsv", "Task Singular Vectors (TSV), alpha=1", "tsv", {"alpha": 1.0}),
    MergeSetting("star", "STAR, eta=40%", "star", {"eta": 40.0}),
    MergeSetting("ties", "TIES, density 0.2, lambda=1", "ties", {"density": 0.2, **_UNIT}),
    MergeSetting("dare", "DARE, mask rate 0.9, lambda=1", "dare_linear", {"density": 0.1, **_UNIT}),
)
MERGE_SETTING_NAMES = tuple(setting.name for setting in MERGE_SETTINGS)


def merge_setting(name: str) -> MergeSetting:
    """The merge setting called ``name`` (UserError: no such setting)."""
    for candidate in MERGE_SETTINGS:
        if candidate.name == name:
            return candidate
    raise UserError(f"unknown merge setting {name!r}; choose from {', '.join(MERGE_SETTING_NAMES)}")


#: Which norm of each tensor's change the random-dW control matches.
CONTROL_MATCHES = {
    "frobenius": "||dW||_F, the paper's D.4",
    "operator": "||dW||_2, the largest singular value (F.1's quantity; a vector's is its length)",
}
#: Which tensors the random-dW control adds noise to.
CONTROL_SCOPES = {
    "projections": "every attention and MLP projection, as in the paper",
    "changed": "every tensor VLM_LM changed: projections, norm scales, embeddings and LM head",
}


@dataclass(frozen=True)
class RandomControlParameters:
    """The random-dW control's parameters."""

    seed: int = option(0, "seed of the noise")
    match: str = option(
        "frobenius", "the norm of each tensor's change the noise matches", choices=CONTROL_MATCHES
    )
    scope: str = option("projections", "the tensors the noise is added to", choices=CONTROL_SCOPES)

    def __post_init__(self) -> None:
        for name, allowed in (("match", CONTROL_MATCHES), ("scope", CONTROL_SCOPES)):
            if getattr(self, name) not in allowed:
                raise UserError(f"unknown {name} {getattr(self, name)!r}; choose from {', '.join(allowed)}")


@dataclass(frozen=True)
class AblationParameters:
    """The channel ablation's parameters (``kinds`` None: the paper's norms that the model has)."""

    kinds: Sequence[str] | None = option(
        None,
        "comma-separated norm names, as the model names them",
        flag="--norms",
        metavar="A,B",
        shown=f"those of {', '.join(PAPER_NORMS)} the model has, as in the paper",
    )
    top_k: int = option(DEFAULT_TOP_K, "channels per layer and norm", metavar="K")
    settings: Sequence[str] = option(
        ABLATION_SETTINGS, "single (each norm alone) and/or joint (all at once), comma-separated", metavar="S"
    )

    def __post_init__(self) -> None:
        """Refuse what no model could run, before one loads (the widest K a model allows is checked on it)."""
        if self.kinds is not None and not self.kinds:
            raise UserError("--norms names no norm; name one or more, or leave it out for the paper's")
        if self.top_k < 1:
            raise UserError(f"--top-k {self.top_k}: choose 1 or more channels")
        unknown = sorted(set(self.settings) - set(ABLATION_SETTINGS))
        if unknown or not self.settings:
            named = ", ".join(unknown) if unknown else "names no setting"
            raise UserError(f"--settings {named}: choose from {', '.join(ABLATION_SETTINGS)}")


@dataclass(frozen=True)
class MergeParameters:
    """The merge's parameters: the one setting to run, OUT its checkpoint (None: the sweep of all seven,
    ``OUT/<setting>/``), and DARE's mask seed."""

    setting: str | None = option(
        None, "the one setting to run", choices=MERGE_SETTING_NAMES, shown="none; this or --sweep"
    )
    seed: int = option(0, "seed of DARE's random mask")

    def __post_init__(self) -> None:
        if self.setting is not None:
            merge_setting(self.setting)
