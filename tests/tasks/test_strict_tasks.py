"""The strict-format suite as lm-eval tasks: configs, data switch, CoT extraction, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from lm_eval.api.task import Task
    from lm_eval.tasks import TaskManager

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harness_tasks"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
STRICT_TASKS = ("ifeval_strict", "gsm8k_cot_strict", "gpqa_diamond_cot_strict", "eq_bench_strict")
FIXTURE_DOCS = {"ifeval_strict": 4, "gsm8k_cot_strict": 4, "gpqa_diamond_cot_strict": 3, "eq_bench_strict": 2}
HEADLINE_KEYS = {
    "ifeval_strict": (
        "prompt_level_strict_acc,none",
        "inst_level_strict_acc,none",
        "prompt_level_loose_acc,none",
        "inst_level_loose_acc,none",
    ),
    "gsm8k_cot_strict": ("exact_match,flexible-extract", "exact_match,strict-match"),
    "gpqa_diamond_cot_strict": ("exact_match,flexible-extract", "exact_match,strict-match"),
    "eq_bench_strict": ("eqbench,none", "percent_parseable,none"),
}
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Local fixtures, no hub, and punkt_tab written into a temporary directory."""
    from sinkbench.tasks import _data, _punkt

    monkeypatch.setenv(_data.DATA_DIR_ENV, str(FIXTURES))
    monkeypatch.setenv(_punkt.NLTK_DATA_ENV, str(tmp_path / "nltk_data"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return monkeypatch


def task_manager() -> TaskManager:
    """A TaskManager that sees only ``harness_tasks``: no lm-eval built-ins to index."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(HARNESS), include_defaults=False)


def load_tasks(*names: str) -> dict:
    """Build the named tasks (or groups) into ``{task_name: Task}``."""
    return task_manager().load(list(names))["tasks"]


def grade(task: Task, doc: dict, response: str) -> dict[str, float]:
    """Run one response through the task's own filter pipelines and ``process_results``."""
    from lm_eval.api.instance import Instance
    from lm_eval.filters import build_filter_ensemble

    scores = {}
    for spec in task.config.filter_list:
        name = spec["name"]
        steps = [
            (step["function"], {k: v for k, v in step.items() if k != "function"}) for step in spec["filter"]
        ]
        instance = Instance(request_type="generate_until", doc=doc, arguments=("", {}), idx=0)
        instance.resps = [response]
        build_filter_ensemble(name, steps).apply([instance])
        scores[name] = task.process_results(doc, [instance.filtered_resps[name]])["exact_match"]
    return scores


# ---------------------------------------------------------------- task configs


def control_members() -> list[str]:
    """The lm-eval built-in tasks the control group names."""
    import yaml

    return yaml.safe_load((HARNESS / "groups" / "sinkbench_control.yaml").read_text(encoding="utf-8"))["task"]


def test_control_group_is_mmlu_and_boolq() -> None:
    assert control_members() == ["mmlu", "boolq"]


@pytest.mark.slow
def test_lm_eval_validate_accepts_every_task() -> None:
    names = [*STRICT_TASKS, "sinkbench_format", "sinkbench_control", *control_members()]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lm_eval",
            "validate",
            "--tasks",
            ",".join(names),
            "--include_path",
            str(HARNESS),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "All tasks found and valid" in done.stdout


def test_format_group_builds_four_zero_shot_greedy_tasks(offline: pytest.MonkeyPatch) -> None:
    loaded = task_manager().load(["sinkbench_format"])
    assert loaded["group_map"] == {"sinkbench_format": list(STRICT_TASKS)}
    for name, task in loaded["tasks"].items():
        assert task.VERSION == 1.0, name
        assert task.config.num_fewshot == 0, name
        assert task.config.generation_kwargs["do_sample"] is False, name
        assert task.config.generation_kwargs["temperature"] == 0.0, name
        assert len(task.eval_docs) == FIXTURE_DOCS[name], name


def test_cot_prompts_state_the_strict_phrase(offline: pytest.MonkeyPatch) -> None:
    tasks = load_tasks("gsm8k_cot_strict", "gpqa_diamond_cot_strict")
    gsm8k, gpqa = tasks["gsm8k_cot_strict"], tasks["gpqa_diamond_cot_strict"]
    prompt = gsm8k.doc_to_text(gsm8k.eval_docs[0])
    assert '"The answer is N."' in prompt
    assert prompt.endswith("How many rolls are left?")
    prompt = gpqa.doc_to_text(gpqa.eval_docs[0])
    assert '"The answer is (X)."' in prompt
    assert all(f"\n({letter}) " in prompt for letter in "ABCD")


# ---------------------------------------------------------------- data switch


@pytest.mark.parametrize(
    ("family", "hub_path", "hub_name"),
    [
        ("ifeval_strict", "google/IFEval", None),
        ("gsm8k_cot_strict", "openai/gsm8k", "main"),
        ("gpqa_diamond_cot_strict", "Idavidrein/gpqa", "gpqa_diamond"),
        ("eq_bench_strict", "pbevan11/EQ-Bench", None),
    ],
)
def test_without_the_switch_tasks_load_the_hub_dataset(
    family: str, hub_path: str, hub_name: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    import datasets

    from sinkbench.tasks import _data

    calls = []
    monkeypatch.delenv(_data.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(datasets, "load_dataset", lambda *args, **kwargs: calls.append(args) or "hub")
    source = importlib.import_module(f"sinkbench.tasks.{family}.utils").Task.SOURCE
    assert _data.load_task_data(source) == ("hub", {"source": "hub", "dataset": hub_path, "name": hub_name})
    assert calls == [(hub_path, hub_name)]


def test_offline_without_a_data_folder_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No hub and no SINKBENCH_DATA_DIR: a typed error naming the dataset and the fix, from lm-eval itself."""
    from sinkbench.tasks import _data

    monkeypatch.delenv(_data.DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-home"))
    with pytest.raises(_data.DataUnavailable) as raised:
        load_tasks("gsm8k_cot_strict")
    message = str(raised.value)
    assert message.startswith("cannot load openai/gsm8k from the Hugging Face Hub")
    assert raised.value.fix.startswith(
        "set SINKBENCH_DATA_DIR to a folder holding the original 'gsm8k_test.jsonl'"
    )
    assert f"Fix: {raised.value.fix}" in message
    assert "\n" not in message


def test_switch_without_the_file_is_an_error_not_a_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sinkbench.tasks import _data
    from sinkbench.tasks.gsm8k_cot_strict import utils

    monkeypatch.setenv(_data.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(_data.DataUnavailable) as raised:
        _data.load_task_data(utils.Task.SOURCE)
    message = str(raised.value)
    assert (
        "gsm8k_test.jsonl does not exist" in message
        and "unset SINKBENCH_DATA_DIR to load openai/gsm8k" in message
    )
    assert "\n" not in message


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("argv_tail", [["--tasks", "gsm8k_cot_strict"]])
def test_missing_data_ends_sinkbench_eval_without_a_traceback(tmp_path: Path, argv_tail: list[str]) -> None:
    from tiny_models import save_tiny_model

    from sinkbench.tasks import _data

    model = save_tiny_model(tmp_path / "model", "llama")
    env = {**__import__("os").environ, _data.DATA_DIR_ENV: str(tmp_path / "nothing-here")}
    done = subprocess.run(
        [sys.executable, "-m", "sinkbench", "eval", "--model", "hf", "--model_args", f"pretrained={model}", *argv_tail],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert (
        last.startswith("sinkbench eval: SINKBENCH_DATA_DIR=") and "gsm8k_test.jsonl does not exist" in last
    )


def test_results_record_the_local_file_and_its_hash(offline: pytest.MonkeyPatch) -> None:
    import hashlib

    task = load_tasks("gsm8k_cot_strict")["gsm8k_cot_strict"]
    expected = hashlib.sha256((FIXTURES / "gsm8k_test.jsonl").read_bytes()).hexdigest()
    record = task.dump_config()["metadata"]["data"]
    assert record == {"source": "local", "files": [{"file": "gsm8k_test.jsonl", "sha256": expected}]}


def test_malformed_local_files_name_the_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sinkbench.tasks import _data
    from sinkbench.tasks.gpqa_diamond_cot_strict import utils as gpqa
    from sinkbench.tasks.gsm8k_cot_strict import utils as gsm8k

    monkeypatch.setenv(_data.DATA_DIR_ENV, str(tmp_path))
    (tmp_path / "gsm8k_test.jsonl").write_text(
        '{"question": "q", "answer": "#### 1"}\n{oops\n', encoding="utf-8"
    )
    with pytest.raises(
        _data.DataUnavailable, match=r"gsm8k_test\.jsonl: line 2 is not valid JSON: Expecting"
    ):
        _data.load_task_data(gsm8k.Task.SOURCE)
    (tmp_path / "gsm8k_test.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(_data.DataUnavailable, match="holds no records"):
        _data.load_task_data(gsm8k.Task.SOURCE)
    (tmp_path / "gpqa_diamond.csv").write_text("Question,Correct Answer\nq,a\n", encoding="utf-8")
    with pytest.raises(
        _data.DataUnavailable, match=r"missing column\(s\) \['Record ID', 'Incorrect Answer 1'"
    ):
        _data.load_task_data(gpqa.Task.SOURCE)


# ---------------------------------------------------------------- CoT extraction

COT_CASES = json.loads((FIXTURES / "cot_cases.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def cot_tasks() -> dict:
    from sinkbench.tasks import _data

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(_data.DATA_DIR_ENV, str(FIXTURES))
        return load_tasks("gsm8k_cot_strict", "gpqa_diamond_cot_strict")


@pytest.mark.parametrize("case", COT_CASES["gsm8k_cot_strict"], ids=lambda case: case["why"])
def test_gsm8k_answers_with_and_without_the_strict_phrase(case: dict, cot_tasks: dict) -> None:
    task = cot_tasks["gsm8k_cot_strict"]
    scores = grade(task, task.eval_docs[case["doc"]], case["response"])
    assert scores == {"strict-match": case["strict-match"], "flexible-extract": case["flexible-extract"]}


@pytest.mark.parametrize("case", COT_CASES["gpqa_diamond_cot_strict"], ids=lambda case: case["why"])
def test_gpqa_answers_with_and_without_the_strict_phrase(case: dict, cot_tasks: dict) -> None:
    task = cot_tasks["gpqa_diamond_cot_strict"]
    doc = task.eval_docs[0]
    correct = doc["answer"].strip("()")
    wrong = next(letter for letter in "ABCD" if letter != correct)
    response = case["response"].format(
        correct=correct, wrong=wrong, correct_text=doc["choices"]["ABCD".index(correct)]
    )
    scores = grade(task, doc, response)
    assert scores == {"strict-match": case["strict-match"], "flexible-extract": case["flexible-extract"]}


def test_gpqa_option_order_is_fixed_per_question() -> None:
    from sinkbench.tasks.gpqa_diamond_cot_strict.utils import shuffle_options

    row = {
        "Record ID": "recX",
        "Question": "q",
        "Correct Answer": " right [title] x ",
        **{f"Incorrect Answer {i}": f"wrong {i}" for i in (1, 2, 3)},
    }
    first, again = shuffle_options(row), shuffle_options(dict(row))
    assert first == again
    assert first["choices"]["ABCD".index(first["answer"].strip("()"))] == "right. x"
    orders = {tuple(shuffle_options({**row, "Record ID": f"rec{i}"})["choices"]) for i in range(12)}
    assert len(orders) > 1  # the order depends on the question, not on global random state


# ---------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-init two-layer Llama with a byte-level tokenizer and a chat template, built offline."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny_llama")
    specials = ["<pad>", "<|im_start|>", "<|im_end|>"]
    vocab = {
        token: index for index, token in enumerate(specials + sorted(pre_tokenizers.ByteLevel.alphabet()))
    }
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", bos_token="<|im_start|>", eos_token="<|im_end|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


def evaluate(model_dir: Path, tasks: list[str], limit: int | None = None) -> dict:
    """``simple_evaluate`` with the chat template, greedy and 8 new tokens (kept short for the test)."""
    from lm_eval import simple_evaluate

    return simple_evaluate(
        model="hf",
        model_args={"pretrained": str(model_dir), "dtype": "float32"},
        tasks=tasks,
        task_manager=task_manager(),
        apply_chat_template=True,
        gen_kwargs={"max_gen_toks": 8},
        batch_size=4,
        device="cpu",
        limit=limit,
        log_samples=True,
        bootstrap_iters=0,
    )


@pytest.mark.slow
def test_format_suite_runs_end_to_end(tiny_model: Path, offline: pytest.MonkeyPatch) -> None:
    output = evaluate(tiny_model, ["sinkbench_format"])
    assert output["group_subtasks"]["sinkbench_format"] == list(STRICT_TASKS)
    for name in STRICT_TASKS:
        assert output["n-samples"][name] == {"original": FIXTURE_DOCS[name], "effective": FIXTURE_DOCS[name]}
        assert output["versions"][name] == 1.0
        assert set(HEADLINE_KEYS[name]) <= set(output["results"][name]), name
        sample = output["samples"][name][0]
        assert "<|im_start|>user\n" in sample["arguments"][0][0], "chat template applied"
        assert sample["arguments"][0][1]["do_sample"] is False
    for name in ("gsm8k_cot_strict", "gpqa_diamond_cot_strict"):
        assert {sample["filter"] for sample in output["samples"][name]} == {
            "strict-match",
            "flexible-extract",
        }
    assert 0 <= output["results"]["eq_bench_strict"]["percent_parseable,none"] <= 100

    samples = output["samples"]["ifeval_strict"]
    ifeval = output["results"]["ifeval_strict"]
    for sample in samples:
        assert isinstance(sample["prompt_level_strict_acc"], bool)
        assert len(sample["inst_level_strict_acc"]) == len(sample["doc"]["instruction_id_list"])
    assert sorted(sample["doc"]["key"] for sample in samples) == [9001, 9002, 9003, 9004]
    strict = [sample["prompt_level_strict_acc"] for sample in samples]
    assert ifeval["prompt_level_strict_acc,none"] == pytest.approx(sum(strict) / len(strict))
    per_instruction = [value for sample in samples for value in sample["inst_level_strict_acc"]]
    assert ifeval["inst_level_strict_acc,none"] == pytest.approx(sum(per_instruction) / len(per_instruction))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"real IFEval/GSM8K files not present at {SHARED_DATA}")
def test_real_files_run_with_limit_5(tiny_model: Path, offline: pytest.MonkeyPatch) -> None:
    from sinkbench.tasks import _data

    offline.setenv(_data.DATA_DIR_ENV, str(SHARED_DATA))
    output = evaluate(tiny_model, ["ifeval_strict", "gsm8k_cot_strict"], limit=5)
    assert output["config"]["limit"] == 5
    assert output["n-samples"]["ifeval_strict"] == {"original": 541, "effective": 5}
    assert output["n-samples"]["gsm8k_cot_strict"] == {"original": 1319, "effective": 5}
    first_keys = [json.loads(line)["key"] for line in (SHARED_DATA / "ifeval_input_data.jsonl").open()][:5]
    assert sorted(sample["doc"]["key"] for sample in output["samples"]["ifeval_strict"]) == sorted(first_keys)
    first_questions = [json.loads(line)["question"] for line in (SHARED_DATA / "gsm8k_test.jsonl").open()][:5]
    questions = {sample["doc"]["question"] for sample in output["samples"]["gsm8k_cot_strict"]}
    assert questions == set(first_questions)
