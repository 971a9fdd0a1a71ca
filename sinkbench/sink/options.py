"""How S is measured: the probe options, their defaults and their allowed values (torch-free, so that
``sinkbench --help`` stays instant).

Choices where the paper is silent (each an option of :class:`ProbeOptions`, recorded in every output):

* ``sink_position="head"``: p_sink is the key that receives the most attention summed over the prompt's queries,
  per (prompt, layer, head); ``"query"`` takes each query's own argmax, ``"first"`` the first token (the paper's
  C.3 probe uses position 0).
* Queries that cannot see p_sink are not observations. A query whose only visible key is p_sink has ``a = 1`` and
  ``G = +inf``: dropped by default (the paper counts "non-degenerate" observations), kept by ``keep_degenerate``.
* ``chat_template="auto"``: prompts are one user turn with the generation prompt when the tokenizer has a chat
  template (the paper's instruct protocol), raw otherwise.
* Batches are right-padded by default (left padding passes explicit position ids); padded keys are masked and
  padded queries not observations, so neither batching nor padding changes S.
* ``num_layers=10``: the last 10 decoder layers (all of them for shallower models).
* ``layer_band``: instead, a third of the decoder (the paper's E.4 depth ablation, Table 13) or an inclusive range
  of decoder-layer indices. Thirds split ``0 .. D-1`` at ``round(D/3)`` and ``round(2D/3)`` (30 layers: 0-9, 10-19,
  20-29; 32: 0-10, 11-20, 21-31); the attention layers whose index falls in the band are probed.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import Field, asdict, dataclass, field, fields
from typing import Any

from sinkbench.errors import UserError

#: How the sink key is chosen, each mode with its meaning.
SINK_MODES = {
    "head": "the key each head attends to most",
    "query": "each query's own argmax",
    "first": "the first token",
}
#: Modes that give one ``p_sink`` per head, as the margin bound needs.
PER_HEAD_SINK_MODES = ("head", "first")
CHAT_TEMPLATE_MODES = ("auto", "on", "off")
PADDING_SIDES = ("right", "left")
#: The named layer bands (thirds of the decoder); any ``START-END`` range of layer indices is a band too.
LAYER_THIRDS = ("first-third", "middle-third", "last-third")
_RANGE = re.compile(r"^(\d+)-(\d+)$")
#: ``num_layers`` that probes every layer of any model (the head map's default).
ALL_LAYERS = 1000
#: The head map's default selection: the top tenth of heads by median G.
DEFAULT_TOP_FRAC = 0.1


def option(default: Any, help: str, **cli: Any) -> Any:
    """A field of an options model with its command-line option (:func:`sinkbench.cli.options.model_options`):
    ``help`` (the CLI adds the default) and argparse keywords ``cli`` (``metavar``; ``choices``, a mapping giving
    each choice's meaning; ``flag`` and ``dest`` where not the field's name; ``shown``: how the default reads)."""
    return field(default=default, metadata={"help": help, **cli})


def option_flag(item: Field) -> str:
    """The command-line option of an options-model field made by :func:`option`: its ``flag``, else
    ``--num-layers`` for ``num_layers``."""
    return item.metadata.get("flag", "--" + item.name.replace("_", "-"))


@dataclass(frozen=True)
class ProbeOptions:
    """How S is measured; the module docstring gives the reasoning behind each default. The one home of the
    defaults: the CLI, the lm-eval task and the monitor read them here."""

    num_layers: int = option(
        10, "probe the last K decoder layers, all of them if the model has fewer", metavar="K"
    )
    layer_band: str | None = option(
        None,
        f"probe a band of decoder layers instead of the last K: {', '.join(LAYER_THIRDS)} (the paper's depth "
        "ablation), or START-END, decoder-layer indices inclusive",
        metavar="BAND",
        shown="none, the last K",
    )
    sink_position: str = option("head", "how the sink key is chosen", choices=SINK_MODES)
    keep_degenerate: bool = option(
        False,
        "count queries that can see only the sink key (attention 1, so G is infinite) as observations instead "
        "of dropping them",
        shown="dropped",
    )
    chat_template: str = option(
        "auto",
        "wrap each prompt as a user turn with the tokenizer's chat template: auto = when it has one",
        choices=CHAT_TEMPLATE_MODES,
    )
    padding_side: str = option(
        "right", "where batches are padded; S does not depend on it", choices=PADDING_SIDES
    )
    batch_size: int = option(8, "prompts per forward pass; S does not depend on it", metavar="N")
    max_tokens: int = 4096
    use_flash_kernel: bool = True

    def __post_init__(self) -> None:
        """Refuse a value no probe takes, naming the field, its command-line option and what it takes."""
        if not (self.layer_band is None or _valid_band(self.layer_band)):
            raise UserError(_band_error(self.layer_band))
        checks = {
            "num_layers": (_positive_int(self.num_layers), "a whole number >= 1"),
            "sink_position": (self.sink_position in SINK_MODES, f"one of {', '.join(SINK_MODES)}"),
            "keep_degenerate": (isinstance(self.keep_degenerate, bool), "true or false"),
            "chat_template": (
                self.chat_template in CHAT_TEMPLATE_MODES,
                f"one of {', '.join(CHAT_TEMPLATE_MODES)}",
            ),
            "padding_side": (self.padding_side in PADDING_SIDES, f"one of {', '.join(PADDING_SIDES)}"),
            "batch_size": (_positive_int(self.batch_size), "a whole number >= 1"),
            "max_tokens": (_positive_int(self.max_tokens) and self.max_tokens >= 2, "a whole number >= 2"),
            "use_flash_kernel": (isinstance(self.use_flash_kernel, bool), "true or false"),
        }
        options = {item.name: option_flag(item) for item in fields(self) if item.metadata}
        bad = [
            f"{name}{f' ({options[name]})' if name in options else ''} {getattr(self, name)!r}: give {wanted}"
            for name, (ok, wanted) in checks.items()
            if not ok
        ]
        if bad:
            raise UserError(f"invalid probe option(s): {'; '.join(bad)}")

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


def _valid_band(band: object) -> bool:
    if not isinstance(band, str):
        return False
    found = _RANGE.match(band)
    return band in LAYER_THIRDS or (found is not None and int(found[1]) <= int(found[2]))


def _band_error(band: object) -> str:
    return (
        f"layer band {band!r}: expected one of {', '.join(LAYER_THIRDS)} or START-END (decoder-layer indices, "
        "inclusive, START <= END), e.g. 10-19"
    )


def band_layers(band: str, depth: int) -> range:
    """The decoder-layer indices of a layer band (module docstring) in a decoder of ``depth`` layers; UserError
    unless the band is a third or a ``START-END`` range inside the decoder."""
    if not _valid_band(band):
        raise UserError(_band_error(band))
    if band in LAYER_THIRDS:
        third = LAYER_THIRDS.index(band)
        return range(round(depth * third / 3), round(depth * (third + 1) / 3))
    start, end = (int(part) for part in _RANGE.match(band).groups())
    if end >= depth:
        raise UserError(
            f"layer band {band!r}: the decoder has layers 0-{depth - 1}; choose a range inside it"
        )
    return range(start, end + 1)


@dataclass(frozen=True)
class IntervalOptions:
    """How S's bootstrap interval over prompts is drawn (:mod:`sinkbench.sink.uncertainty`); ``resamples=0``
    turns it off."""

    resamples: int = option(
        1000,
        "resamples of the bootstrap over prompts behind each interval; 0: no intervals",
        flag="--bootstrap-resamples",
        metavar="N",
    )
    seed: int = option(0, "seed of the bootstrap", dest="interval_seed", metavar="SEED")
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if not (isinstance(self.resamples, int) and self.resamples >= 0):
            raise UserError(f"resamples must be a whole number >= 0, got {self.resamples!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise UserError(f"the bootstrap's seed must be a whole number >= 0, got {self.seed!r}")
        if not 0.0 < self.confidence < 1.0:
            raise UserError(f"confidence must lie strictly between 0 and 1, got {self.confidence!r}")

    def to_dict(self) -> dict:
        """JSON-ready dictionary."""
        return asdict(self)


@dataclass(frozen=True)
class BucketRule:
    """How an lm-eval samples file splits into pass and fail buckets (:mod:`sinkbench.sink.buckets`); each
    field's help says what it is."""

    metric: str = option("prompt_level_strict_acc", "the per-prompt metric of each sample")
    threshold: float = option(
        0.5, "a prompt passes when its metric is at least this", shown="%(default)s, the paper's"
    )
    prompt_field: str = option("prompt", "the document field holding the prompt")
    filter: str | None = option(None, "lm-eval filter of the samples to read", shown="the file's only one")
