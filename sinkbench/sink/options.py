"""How S is measured: the probe options, their defaults and their allowed values (torch-free, so that
``sinkbench --help`` stays instant).

Choices where the paper is silent (each an option of :class:`ProbeOptions`, recorded in every output):

* ``sink_position="head"``: p_sink is one key per (prompt, layer, head): the key that receives
  the most attention summed over the prompt's queries ("per-head argmax key position").
  ``"query"`` takes the argmax of each query's own attention row instead; ``"first"`` fixes
  p_sink at the first token (the paper's C.3 probe uses position 0).
* Queries that cannot see p_sink are not observations. A query whose only visible key is
  p_sink (the first query when p_sink is the first token) has ``a = 1`` and ``G = +inf``:
  dropped by default (the paper counts "non-degenerate" observations); ``keep_degenerate``
  keeps them as ``+inf``, which the median tolerates.
* ``chat_template="auto"``: prompts are wrapped as one user turn with the generation prompt
  when the tokenizer has a chat template (the paper's instruct protocol), raw otherwise.
* Batches are right-padded by default, so every real token keeps its unbatched position;
  left padding passes explicit position ids. Padded keys are masked and padded queries are
  not observations, so neither batching nor padding changes S.
* ``num_layers=10``: the last 10 decoder layers (all of them for shallower models).
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, fields
from typing import Any

from sinkbench.errors import UserError

#: How the sink key is chosen: per head (received attention), per query (row argmax), or the first token.
SINK_MODES = ("head", "query", "first")
#: Modes that give one ``p_sink`` per head, as the margin bound needs.
PER_HEAD_SINK_MODES = ("head", "first")
CHAT_TEMPLATE_MODES = ("auto", "on", "off")
PADDING_SIDES = ("right", "left")


@dataclass(frozen=True)
class ProbeOptions:
    """How S is measured; the module docstring gives the reasoning behind each default.

    This dataclass is the one home of the defaults: the CLI, the lm-eval task and the monitor read them here.
    """

    num_layers: int = 10
    sink_position: str = "head"
    keep_degenerate: bool = False
    chat_template: str = "auto"
    padding_side: str = "right"
    batch_size: int = 8
    max_tokens: int = 4096
    use_flash_kernel: bool = True

    def __post_init__(self) -> None:
        checks = {
            "num_layers": _positive_int(self.num_layers),
            "sink_position": self.sink_position in SINK_MODES,
            "keep_degenerate": isinstance(self.keep_degenerate, bool),
            "chat_template": self.chat_template in CHAT_TEMPLATE_MODES,
            "padding_side": self.padding_side in PADDING_SIDES,
            "batch_size": _positive_int(self.batch_size),
            "max_tokens": _positive_int(self.max_tokens) and self.max_tokens >= 2,
            "use_flash_kernel": isinstance(self.use_flash_kernel, bool),
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise UserError(f"Invalid probe option(s) {bad}: got {[getattr(self, n) for n in bad]}.")

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> ProbeOptions:
        """Build options from a dict (e.g. lm-eval task metadata), rejecting unknown keys."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values or {}) - known)
        if unknown:
            hints = {k: difflib.get_close_matches(k, known, n=1) for k in unknown}
            raise UserError(f"Unknown probe option(s) {hints} (name: closest match). Known: {sorted(known)}.")
        return cls(**(values or {}))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return asdict(self)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(frozen=True)
class IntervalOptions:
    """How S's bootstrap interval over prompts is drawn (:mod:`sinkbench.sink.uncertainty`); ``resamples=0``
    turns it off."""

    resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not (isinstance(self.resamples, int) and self.resamples >= 0):
            raise UserError(f"resamples must be a whole number >= 0, got {self.resamples!r}")
        if not 0.0 < self.confidence < 1.0:
            raise UserError(f"confidence must lie strictly between 0 and 1, got {self.confidence!r}")

    def to_dict(self) -> dict:
        """JSON-ready dictionary."""
        return asdict(self)
