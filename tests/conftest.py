"""Test-session settings (nothing reaches the network) and shared fixtures."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Cache compiled modules even where PYTHONDONTWRITEBYTECODE is set (this project's machines set it): pytest's
# assertion rewriting then compiles each test module once, not at every run (collecting: 6.4 s against 2.8 s on a
# 2-core machine). The caches are __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False


def pytest_configure(config):
    """Force Hugging Face libraries offline for the whole session; under pytest-xdist, share the cores between
    the workers (torch would start one thread per core in each: on 2 cores, 2 workers ran 20% slower)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A browser test is a slow test: the fast tier (``-m "not slow"``) leaves it out."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def site_builds_without_the_api_reference() -> Iterator[None]:
    """Site builds inside the tests leave out the Guide's Python API page (mkdocstrings: half of each build's
    time). What they check is the board; the API page is checked where the whole configuration runs:
    ``real_board_site`` (which restores it) and ``sinkbench site build`` in a fresh interpreter
    (``tests/docs/test_guide_reference.py``)."""
    from sinkbench.leaderboard import project

    @functools.wraps(project._plugins)
    def without_mkdocstrings(*args: object, **options: object) -> dict:
        plugins = without_mkdocstrings.__wrapped__(*args, **options)
        return {name: value for name, value in plugins.items() if name != "mkdocstrings"}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(project, "_plugins", without_mkdocstrings)
        yield


@pytest.fixture
def whole_site_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Site builds in this test run the whole ``mkdocs.yml``, the Guide's API page too (for a test that compares
    a build here with one in a fresh interpreter, or that needs the API page's libraries)."""
    from sinkbench.leaderboard import project

    monkeypatch.setattr(project, "_plugins", project._plugins.__wrapped__)


@pytest.fixture(scope="session")
def task_manager(tmp_path_factory: pytest.TempPathFactory):
    """An lm-eval TaskManager that knows only a tiny local multiple-choice task (no network)."""
    from lm_eval.tasks import TaskManager
    from tiny_models import CHOICE_DOCS, TASK_YAML

    folder = tmp_path_factory.mktemp("tasks")
    (folder / "docs.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in CHOICE_DOCS))
    (folder / "tiny_choice.yaml").write_text(TASK_YAML.format(data=folder / "docs.jsonl"))
    return TaskManager(include_path=str(folder), include_defaults=False)


@dataclass(frozen=True)
class TinyPair:
    """A tiny VLM, its extracted VLM-LM, a reference LLM the VLM-LM moved away from, a second endpoint of that
    reference, and a pretrained base both came from (all Llama, 3 layers, with the tiny tokenizer)."""

    vlm: Path
    vlm_lm: Path
    reference: Path
    text_endpoint: Path
    base: Path


def _shifted(source: Path, target: Path, scale: float, seed: int) -> Path:
    """A copy of the causal LM ``source`` with every tensor moved by ``scale`` times seeded noise."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(source).save_pretrained(target)
    return target


@pytest.fixture(scope="session")
def tiny_pair(tmp_path_factory: pytest.TempPathFactory) -> TinyPair:
    """The :class:`TinyPair`, built once per session."""
    from tiny_vlms import save_tiny_vlm

    from sinkbench.extract import extract_lm

    root = tmp_path_factory.mktemp("pair")
    vlm = save_tiny_vlm(root / "vlm", "llava")
    vlm_lm = extract_lm(str(vlm), root / "vlm-lm").output
    reference = _shifted(vlm_lm, root / "reference", 0.05, seed=1)
    return TinyPair(
        vlm=vlm,
        vlm_lm=vlm_lm,
        reference=reference,
        text_endpoint=_shifted(reference, root / "text-endpoint", 0.01, seed=2),
        base=_shifted(reference, root / "base", 0.05, seed=3),
    )
