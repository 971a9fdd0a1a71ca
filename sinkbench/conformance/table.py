"""The architecture tables: the sweeps' verdicts as JSON (shipped in the package, read by the leaderboard) and as
the Markdown page the site's Methodology section and the README link."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY, FAILED, REFUSED, UNTESTED, Verdict

#: The committed verdicts, shipped in the package.
TABLE_JSON = Path(__file__).with_name("architectures.json")
#: The committed page, in the site's sources of a checkout (``--write`` is a maintainer's step).
TABLE_PAGE = Path(__file__).resolve().parents[2] / "site" / "docs" / "architectures.md"
SECTIONS = {"probe": "screen, heads, margin, the monitor and sink_strength", "extract": "extract-lm"}
#: Refusals grouped for the summary line, by a phrase of their reason.
REASON_GROUPS = {
    "does not go through transformers' AttentionInterface": "attention not routed through AttentionInterface",
    "has no softmax attention layers": "no softmax attention layers",
    "is bidirectional": "bidirectional attention (an encoder)",
    "combines several softmax calls": "several softmax calls per layer",
    "keys are not the input tokens": "keys that are not the input tokens",
    "passes": "attention arguments the probe does not reproduce",
    "text-only forward fail": "the model's own text-only forward fails",
    "has no standalone *ForCausalLM": "no causal-LM class for the language model",
    "does not map onto": "a language model laid out unlike its causal LM",
    "has no LM head": "no LM head",
    "one model for text and images": "no separate language model",
}


def to_json(version: str, results: dict[str, list[Verdict]]) -> dict[str, Any]:
    """The JSON document: the transformers version, each section's verdicts keyed by model type, and which causal
    LM types are encoder models run as causal decoders (:func:`encoder_types`)."""
    return {
        "transformers": version,
        **{
            section: {v.model_type: _row(v) for v in sorted(verdicts, key=lambda v: v.model_type)}
            for section, verdicts in results.items()
        },
        "encoder_types": encoder_types([v.model_type for v in results.get("probe", [])]),
    }


def encoder_types(causal_types: list[str]) -> dict[str, list[str]]:
    """Of the causal-LM model types, those not decoders by design (an S measured on one describes the model outside
    the way it was trained), from transformers' name tables: ``encoder`` (a masked-LM head or an encoder base model,
    run with a causal mask) and ``encoder_decoder`` (the decoder half, run without its encoder)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
        MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
        MODEL_MAPPING_NAMES,
    )

    seq2seq = [t for t in causal_types if t in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES]
    encoders = [
        t
        for t in causal_types
        if t not in seq2seq
        and (t in MODEL_FOR_MASKED_LM_MAPPING_NAMES or "Encoder" in str(MODEL_MAPPING_NAMES.get(t, "")))
    ]
    return {"encoder": sorted(encoders), "encoder_decoder": sorted(seq2seq)}


def _row(verdict: Verdict) -> dict[str, Any]:
    row = asdict(verdict)
    del row["model_type"], row["seconds"]  # timings vary from run to run; the table must not
    return {key: value for key, value in row.items() if value is not None}


def load() -> dict[str, Any]:
    """The committed verdicts (``architectures.json``)."""
    return json.loads(TABLE_JSON.read_text(encoding="utf-8"))


def version_line(swept: str, running: str) -> str | None:
    """The warning that the running transformers is not the one the table was swept on; None when it is."""
    if running == swept:
        return None
    return (
        f"sinkbench: warning: the architecture table (the model types screen and extract-lm accept) was swept on "
        f"transformers {swept} and this is transformers {running}; a model type's verdict may differ "
        "(`python -m sinkbench.conformance --types MODEL_TYPE` checks one on this version)"
    )


@functools.cache
def warn_if_not_swept_version() -> None:
    """Print :func:`version_line` on stderr, once per process, when the installed transformers is not the version
    ``architectures.json`` records (pyproject.toml allows a range; the table holds for one)."""
    line = version_line(load()["transformers"], importlib.metadata.version("transformers"))
    if line is not None:
        print(line, file=sys.stderr)


def summary(rows: dict[str, dict[str, Any]]) -> str:
    """One line: how many types are measured, refused (by reason) and failed."""
    counts = Counter(row["verdict"] for row in rows.values())
    groups = Counter(_group(row["reason"]) for row in rows.values() if row["verdict"] == REFUSED)
    refused = "; ".join(f"{count} {group}" for group, count in groups.most_common())
    equal = counts[EQUAL] + counts[EQUAL_LOGITS_ONLY]
    line = f"{equal} of {len(rows)} model types accepted and equal to the reference"
    line += f", {counts[REFUSED]} refused" + (f" ({refused})" if refused else "")
    if counts[UNTESTED]:
        line += f", {counts[UNTESTED]} untested (no tiny model can be built from their defaults)"
    return line + (f", {counts[FAILED]} failed the sweep" if counts[FAILED] else "")


def _group(reason: str) -> str:
    return next((group for phrase, group in REASON_GROUPS.items() if phrase in reason), reason)


def to_markdown(document: dict[str, Any]) -> str:
    """The Markdown page of ``document``."""
    probe, extract = document["probe"], document["extract"]
    lines = [
        "# Supported architectures",
        "",
        f"Generated by `python -m sinkbench.conformance --write` with transformers {document['transformers']}; "
        "`tests/conformance/test_conformance.py` reruns both sweeps and fails when this page no longer matches, so a "
        "transformers release that changes an attention shows up here as a diff.",
        "",
        "sinkbench accepts architectures by capability, not by name: every model type of the installed "
        "transformers registry is built as a tiny random model and either measured and compared with an "
        "independent reference, or refused in one line with the reason.",
        "",
        "## Sink Strength (`screen`, `heads`, `margin`, the monitor, `sink_strength`)",
        "",
        f"**{summary(probe)}.** For each causal-LM model type: the model's logits with the probe's attention "
        "equal its own eager attention's, and S and the median G of every probed layer x head equal those "
        "read off the materialised eager probabilities (`output_attentions=True`), within 1e-4. *Equal (logits "
        "only)*: the model's eager code applies its learned sink after normalising, so its probabilities "
        "cannot give G and only the logits are compared.",
        "",
        *_encoder_note(document.get("encoder_types") or {}),
        "| model type | verdict | attention, or why refused | abs. diff. S | max abs. diff. median G | max abs. diff. logits |",
        "|---|---|---|---:|---:|---:|",
        *(
            _line(name, row, "s_difference", "profile_difference", "logits_difference")
            for name, row in probe.items()
        ),
        "",
        "## VLM extraction (`extract-lm`)",
        "",
        f"**{summary(extract)}.** For each image-text-to-text model type: a tiny VLM with its weights spread "
        "so that a wrong tensor shows, extracted with `--verify`: the causal LM reproduces the VLM's text-only "
        "logits within 1e-4 in float32, or `extract-lm` refuses it in one line.",
        "",
        "| model type | verdict | VLM class -> causal LM, or why refused | max abs. diff. logits |",
        "|---|---|---|---:|",
        *(_line(name, row, "logits_difference") for name, row in extract.items()),
        "",
    ]
    return "\n".join(lines)


def encoder_note(found: dict[str, list[str]]) -> str:
    """One paragraph on the causal-LM types that are not decoders by design (:func:`encoder_types`), or ``""``."""
    encoders, halves = found.get("encoder") or [], found.get("encoder_decoder") or []
    if not encoders and not halves:
        return ""
    parts = []
    if encoders:
        parts.append(
            f"{len(encoders)} are encoders ({', '.join(encoders)}): their causal-LM class runs the encoder with a "
            "causal mask (`is_decoder=True`)"
        )
    if halves:
        parts.append(
            f"{len(halves)} are the decoder half of an encoder-decoder model ({', '.join(halves)}), run without "
            "the encoder"
        )
    return (
        f"**Not decoders by design.** Of these types, {'; '.join(parts)}. *Equal* for them says the probe "
        "measures the causal model transformers builds exactly; a checkpoint pretrained as an encoder (or with "
        "an encoder) is then used outside the way it was trained, so its S is not comparable with a decoder LLM's."
    )


def _encoder_note(found: dict[str, list[str]]) -> list[str]:
    note = encoder_note(found)
    return [note, ""] if note else []


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.1e}"


def _line(name: str, row: dict[str, Any], *numbers: str) -> str:
    """A table row: the model type, its verdict and reason, and its ``numbers`` (blank where not measured)."""
    cells = [
        f"`{name}`",
        row["verdict"],
        row["reason"].replace("|", "\\|"),
        *(_number(row.get(key)) for key in numbers),
    ]
    return f"| {' | '.join(cells)} |"
