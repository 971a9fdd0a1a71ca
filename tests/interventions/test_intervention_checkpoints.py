"""Every checkpoint an intervention writes is a standard transformers folder that ``lm_eval --model hf``,
``sinkbench screen`` and ``extract-lm``'s verification accept."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tiny_models import lm_eval_tiny_choice, tiny_tokenizer

from sinkbench.interventions.checkpoint import write_intervention
from sinkbench.sink.options import IntervalOptions

CLIP = {"model_type": "clip_vision_model", "image_size": 28, "patch_size": 14, "hidden_size": 16,
        "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}  # fmt: skip


@pytest.fixture(scope="module")
def checkpoints(tiny_pair, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One checkpoint of each intervention, from the tiny pair."""
    from sinkbench.interventions.ablation import CHANNEL_ABLATION, AblationParameters
    from sinkbench.interventions.merging import MERGE, MergeParameters
    from sinkbench.interventions.qk_norm import QK_NORM_INJECTION
    from sinkbench.interventions.random_control import RANDOM_CONTROL

    root = tmp_path_factory.mktemp("checkpoints")
    pair = {"reference": str(tiny_pair.reference), "vlm_lm": str(tiny_pair.vlm_lm)}
    write_intervention(RANDOM_CONTROL, pair, root / "control", progress=False)
    ablation = AblationParameters(top_k=4)
    write_intervention(
        CHANNEL_ABLATION, {"model": pair["vlm_lm"]}, root / "ablation", ablation, progress=False
    )
    write_intervention(QK_NORM_INJECTION, {"source": pair["vlm_lm"]}, root / "injected", progress=False)
    found = {
        "control": root / "control",
        "ablation": root / "ablation" / "input_layernorm",
        "injected": root / "injected",
    }
    if importlib.util.find_spec("mergekit") is not None:  # the merge extra
        write_intervention(MERGE, pair, root / "merge", MergeParameters(setting="ties"), progress=False)
        found["merge"] = root / "merge"
    return found


def _folder(checkpoints: dict[str, Path], kind: str) -> Path:
    if kind not in checkpoints:
        pytest.skip("mergekit (the merge extra) is not installed")
    return checkpoints[kind]


KINDS = ["control", "ablation", "injected", "merge"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_lm_eval_scores_the_checkpoint(checkpoints, task_manager, kind: str) -> None:
    accuracy, expected = lm_eval_tiny_choice(_folder(checkpoints, kind), task_manager)
    assert accuracy == pytest.approx(expected)


@pytest.mark.parametrize("kind", KINDS)
def test_screen_measures_the_checkpoint(checkpoints, kind: str) -> None:
    from sinkbench.sink.probe_model import probe_model

    report, text = probe_model(
        str(_folder(checkpoints, kind)), interval=IntervalOptions(resamples=20), progress=False
    )
    assert report["model"]["source"] == "dir" and isinstance(report["sink_strength"], float)
    assert "Sink Strength S =" in text


def _llava_around(lm: Path, folder: Path) -> Path:
    """A tiny LLaVA whose language model has ``lm``'s config (random weights), with the tiny tokenizer."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, LlavaConfig

    text = AutoModelForCausalLM.from_pretrained(lm).config
    vlm = AutoModelForImageTextToText.from_config(
        LlavaConfig(text_config=text.to_dict(), vision_config=CLIP, image_token_index=299)
    )
    vlm.save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.mark.parametrize("kind", KINDS)
def test_extract_lms_verification_accepts_the_checkpoint_put_back_into_a_vlm(
    tiny_pair, checkpoints, kind, tmp_path
) -> None:
    # the injected model runs as Qwen3, which the pair's Llama-based VLM cannot hold: a LLaVA around Qwen3 can
    from sinkbench.extract import implant_lm

    folder = _folder(checkpoints, kind)
    vlm = _llava_around(folder, tmp_path / "qwen3-llava") if kind == "injected" else tiny_pair.vlm
    result = implant_lm(str(vlm), folder, tmp_path / "vlm")
    assert result.record["verification"]["passed"], result.record["verification"]
