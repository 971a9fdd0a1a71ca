"""The reproduce blocks of measured entries (sinkbench.leaderboard.reproduce) say what their results files say."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import load_submissions
from sinkbench.tables.build import build_tables

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"


@pytest.fixture(scope="module")
def views():
    return build_views(build_tables(load_submissions(FIXTURES).entries))


def _blocks(views):
    """(model id, revision, reproduce block) of every measured entry page."""
    for pair in views.pairs:
        for block in pair.reproduce:
            model = pair.vlm if "/vlm/" in block.source else pair.reference
            yield model, block
    for backbone in views.backbones:
        for block in backbone.reproduce:
            yield backbone.model, block


def _flags(command: list[str]) -> dict[str, str | bool]:
    found: dict[str, str | bool] = {}
    for index, word in enumerate(command):
        if word.startswith("--"):
            following = command[index + 1] if index + 1 < len(command) else "--"
            found[word] = True if following.startswith("--") else following
    return found


def test_every_measured_results_file_has_a_block(views) -> None:
    sources = {block.source for _, block in _blocks(views)}
    files = {str(p.relative_to(FIXTURES.parent)) for p in FIXTURES.rglob("results_*.json")}
    assert {source.removeprefix("submissions/") for source in sources} == {
        f.removeprefix("submissions/") for f in files
    }


def test_each_block_matches_its_results_file(views) -> None:
    checked = 0
    for model, block in _blocks(views):
        path = FIXTURES.parent / block.source
        data = json.loads(path.read_text(encoding="utf-8"))
        command = shlex.split(block.text.splitlines()[-1])
        flags = _flags(command)
        args = dict(item.split("=", 1) for item in str(flags["--model_args"]).split(","))
        recorded = dict(item.split("=", 1) for item in data["config"]["model_args"].split(","))
        assert args["pretrained"] == model.model_id and args.get("revision") == model.revision, block.source
        assert args.get("dtype") == recorded.get("dtype")
        assert str(flags["--tasks"]).split(",") == list(data["results"])
        assert ("--apply_chat_template" in flags) == (data.get("chat_template") is not None)
        assert ("--fewshot_as_multiturn" in flags) == bool(data.get("fewshot_as_multiturn"))
        limit = data["config"].get("limit")
        assert flags.get("--limit") == (None if limit is None else f"{limit:g}")
        assert flags["--batch_size"] == str(data["config"]["batch_size"])
        stamp = path.name.removeprefix("results_").removesuffix(".json")
        logged = any(path.parent.glob(f"samples_*_{stamp}.jsonl"))
        assert ("--log_samples" in flags) == logged, block.source
        assert f"lm-eval=={data['lm_eval_version']}" in block.text
        assert "/tmp" not in block.text and "/home" not in block.text
        checked += 1
    assert checked == 5
