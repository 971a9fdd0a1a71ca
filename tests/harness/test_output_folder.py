"""lm-eval names its output folder after ``pretrained=``; for a folder of sinkbench's GGUF cache (what
``sinkbench screen --print-model-dir`` prints) that is the cache's absolute path with its slashes replaced
(``__root__.cache__sinkbench__gguf__b179...``), so the adapter names it after the GGUF file instead (patch 6 of
:mod:`sinkbench.harness.plugin`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_models import save_tiny_model

from sinkbench.harness.plugin import install_task_patches
from sinkbench.harness.run import tasks_path
from sinkbench.models import _CACHE_MARKER, cached_gguf


def _results_folder(model: Path, out: Path) -> list[str]:
    """The folders lm-eval's own tracker writes a results file into under ``out`` for ``pretrained=model``."""
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.log_experiment_args(
        model_source="hf",
        model_args=f"pretrained={model},dtype=float32",
        system_instruction=None,
        chat_template=None,
        fewshot_as_multiturn=False,
    )
    tracker.save_results_aggregated(results={"results": {}, "config": {}}, samples=None)
    return sorted(path.parent.relative_to(out).as_posix() for path in out.rglob("results_*.json"))


@pytest.fixture(scope="module")
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder as sinkbench's GGUF cache makes it: a transformers folder and its completion marker."""
    folder = save_tiny_model(tmp_path_factory.mktemp("cache") / "gguf" / "b179c9523d0e6a0f98a330c7", "llama")
    gguf = folder.parent.parent / "weights" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    (folder / _CACHE_MARKER).write_text(f"{gguf}\n{'b1' * 32}\n", encoding="utf-8")
    return folder


def test_a_gguf_cache_run_is_named_after_its_gguf_file(cache_folder: Path, tmp_path: Path) -> None:
    install_task_patches()  # what the sink_strength task does when lm-eval builds it
    assert _results_folder(cache_folder, tmp_path / "runs") == ["SmolLM2-135M-Instruct.Q4_1"]


def test_every_other_model_keeps_lm_evals_name(tmp_path: Path) -> None:
    install_task_patches()
    plain = save_tiny_model(tmp_path / "models" / "plain", "llama")
    expected = str(plain).replace("/", "__")
    assert _results_folder(plain, tmp_path / "runs") == [expected]
    assert cached_gguf(plain) is None


def test_a_strict_suite_run_on_the_cache_is_named_after_its_gguf_file(
    cache_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lm_eval.tasks import TaskManager

    logged = GeneralConfigTracker.log_experiment_args
    monkeypatch.setattr(GeneralConfigTracker, "log_experiment_args", getattr(logged, "__wrapped__", logged))
    monkeypatch.setenv("SINKBENCH_DATA_DIR", str(Path(__file__).parents[1] / "fixtures" / "strict"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    TaskManager(include_path=str(tasks_path()), include_defaults=False).load(["gsm8k_cot_strict"])
    assert _results_folder(cache_folder, tmp_path / "runs") == ["SmolLM2-135M-Instruct.Q4_1"]
