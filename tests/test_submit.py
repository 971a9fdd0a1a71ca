"""``sinkbench submit``: entries built from real lm-eval runs of tiny models, with no local path left in them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import save_tiny_model

from sinkbench.cli import main
from sinkbench.submissions import load_submissions
from sinkbench.submissions.local_paths import local_paths
from sinkbench.tables.aggregate import aggregate_submissions

STRICT_FIXTURES = Path(__file__).parent / "fixtures" / "strict"
FIXTURES = Path(__file__).parent / "fixtures" / "submissions"
#: Anything that looks like an absolute path of this machine.
ABSOLUTE = re.compile(r"(?<![\w:/.])/(?:[\w.@+-]+/)+")


def _lm_eval(model: Path, tasks: str, out: Path) -> None:
    """One real lm-eval run on the fixture data (tiny: a few documents, four new tokens each)."""
    env = {
        **os.environ,
        "SINKBENCH_DATA_DIR": str(STRICT_FIXTURES),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
    command = [
        sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={model}",
        "--tasks", tasks, "--apply_chat_template", "--gen_kwargs", "max_gen_toks=4", "--log_samples",
        "--device", "cpu", "--output_path", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A reference LLM run (sink_strength + strict suite) and a VLM-LM run (strict suite) of tiny models."""
    root = tmp_path_factory.mktemp("runs")
    reference = save_tiny_model(root / "models" / "reference", "llama", seed=0)
    vlm_lm = save_tiny_model(root / "models" / "vlm-lm", "llama", seed=1)
    provenance = {
        "source": {"id": "tiny-org/tiny-vlm", "revision": "0123456789abcdef0123456789abcdef01234567"}
    }
    (vlm_lm / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    _lm_eval(reference, "sink_strength,sinkbench_format", root / "ref-run")
    _lm_eval(vlm_lm, "sinkbench_format", root / "vlm-run")
    return {"reference": root / "ref-run", "vlm": root / "vlm-run", "root": root}


def _pair_args(runs: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [
        "submit", "pair", "--reference", str(runs["reference"]), "--vlm", str(runs["vlm"]), "--name", "tiny-pair",
        "--out", str(out), "--submitter", "tester", "--vl-recipe", "none (tiny test models)", *extra,
    ]  # fmt: skip


REFERENCE_ID = ["--reference-id", "tiny-org/tiny-llm", "--reference-revision", "f" * 40]


def test_submit_pair_makes_an_entry_the_gate_and_aggregate_accept(runs, tmp_path, capsys) -> None:
    out = tmp_path / "submissions"
    assert main(_pair_args(runs, out, *REFERENCE_ID)) == 0
    printed = capsys.readouterr().out
    assert "git checkout -b add-tiny-pair" in printed and "Pull-request checklist" in printed
    entry = out / "pairs" / "tiny-pair"
    assert main(["validate", str(out)]) == 0
    tables = aggregate_submissions(out, tmp_path / "tables")
    assert set(tables.pairs["task"]) >= {"ifeval_strict", "gsm8k_cot_strict"}
    metadata = json.loads((entry / "metadata.json").read_text())
    assert metadata["vlm"] == {
        "id": "tiny-org/tiny-vlm",
        "revision": "0123456789abcdef0123456789abcdef01234567",
    }
    assert metadata["reference_llm"]["id"] == "tiny-org/tiny-llm" and metadata["qk_norm"] == "none"
    for path in entry.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert str(runs["root"]) not in text and str(tmp_path) not in text, path
            assert not ABSOLUTE.search(text), (path, ABSOLUTE.search(text).group(0))
    assert sorted(p.name for p in (entry / "reference").iterdir() if p.name.startswith("samples_ifeval"))


def test_the_redaction_record_lists_each_changed_field(runs, tmp_path) -> None:
    out = tmp_path / "submissions"
    assert main(_pair_args(runs, out, *REFERENCE_ID)) == 0
    entry = out / "pairs" / "tiny-pair"
    records = json.loads((entry / "metadata.json").read_text())["redactions"]
    changed = set()
    for side in ("reference", "vlm"):
        for original in runs[side].rglob("results_*.json"):
            before = dict(_strings(json.loads(original.read_text())))
            after = dict(_strings(json.loads((entry / side / original.name).read_text())))
            assert before.keys() == after.keys()
            changed |= {(f"{side}/{original.name}", key) for key in before if before[key] != after[key]}
            assert local_paths(json.loads((entry / side / original.name).read_text())) == []
    assert {
        (r["file"], r["field"]) for r in records if r["file"].startswith(("reference/results", "vlm/results"))
    } == changed
    assert {"model_name", "config.model_args.pretrained"} <= {field for _, field in changed}


def _strings(value: object, field: str = ""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{field}.{key}" if field else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{field}.{index}")
    elif isinstance(value, str):
        yield field, value


def test_a_local_model_without_an_id_is_not_guessed(runs, tmp_path, capsys) -> None:
    assert main(_pair_args(runs, tmp_path / "s")) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("sinkbench submit: the run in") and "pass --reference-id ORG/NAME" in error
    assert "\n" not in error and "Traceback" not in error and not (tmp_path / "s" / "pairs").exists()


def test_a_run_without_a_required_task_names_it_and_the_run_to_make(runs, tmp_path, capsys) -> None:
    partial = tmp_path / "partial-run"
    shutil.copytree(runs["vlm"], partial)
    for results in partial.rglob("results_*.json"):
        data = json.loads(results.read_text())
        data["results"].pop("gsm8k_cot_strict")
        results.write_text(json.dumps(data))
    args = _pair_args({**runs, "vlm": partial}, tmp_path / "s", *REFERENCE_ID)
    assert main(args) == 1
    error = capsys.readouterr().err.strip()
    assert f"VLM-LM run {partial} lacks gsm8k_cot_strict" in error and "--tasks gsm8k_cot_strict" in error
    assert "\n" not in error


def test_a_testbed_pair_needs_only_ifeval_and_is_marked(runs, tmp_path, capsys) -> None:
    partial = tmp_path / "ifeval-only-run"
    shutil.copytree(runs["vlm"], partial)
    for results in partial.rglob("results_*.json"):
        data = json.loads(results.read_text())
        for block in ("results", "configs", "versions", "n-shot", "n-samples"):
            data[block] = {k: v for k, v in data[block].items() if k == "ifeval_strict"}
        data["group_subtasks"] = {}
        results.write_text(json.dumps(data))
    out = tmp_path / "submissions"
    args = _pair_args({**runs, "vlm": partial}, out, *REFERENCE_ID)
    assert main(args) == 1
    error = capsys.readouterr().err
    assert f"VLM-LM run {partial} lacks" in error and "gsm8k_cot_strict" in error
    assert main([*args, "--testbed"]) == 0
    assert json.loads((out / "pairs" / "tiny-pair" / "metadata.json").read_text())["testbed"] is True
    assert main(["validate", str(out)]) == 0


def test_replacing_an_entry_needs_force(runs, tmp_path, capsys) -> None:
    out = tmp_path / "submissions"
    assert main(_pair_args(runs, out, *REFERENCE_ID)) == 0
    before = (out / "pairs" / "tiny-pair" / "metadata.json").read_text()
    assert main(_pair_args(runs, out, *REFERENCE_ID, "--submitter", "someone else")) == 1
    assert "already exists; pass --force" in capsys.readouterr().err
    assert (out / "pairs" / "tiny-pair" / "metadata.json").read_text() == before
    assert main(_pair_args(runs, out, *REFERENCE_ID, "--submitter", "someone else", "--force")) == 0
    assert (
        json.loads((out / "pairs" / "tiny-pair" / "metadata.json").read_text())["submitter"] == "someone else"
    )
    assert sorted(p.name for p in out.iterdir()) == ["pairs"]  # no staging folder left behind


def test_a_hand_made_entry_with_a_local_path_is_refused_with_the_fix(tmp_path) -> None:
    root = tmp_path / "submissions"
    shutil.copytree(FIXTURES, root)
    results = next((root / "backbones" / "tiny-llm").glob("results_*.json"))
    data = json.loads(results.read_text())
    data["config"]["model_args"] = "pretrained=/home/alice/models/tiny,dtype=bfloat16"
    results.write_text(json.dumps(data))
    problems = [p for p in load_submissions(root).problems if "local path" in p.message]
    assert len(problems) == 1 and problems[0].file.endswith(results.name)
    assert problems[0].field == "config.model_args" and "sinkbench submit" in problems[0].fix
