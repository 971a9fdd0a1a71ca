"""sinkbench's lm-eval adapter (sinkbench/harness/plugin.py): the shape of every symbol it patches, errors a caller
of ``lm_eval.simple_evaluate`` catches, one-line errors under the stock command line, and the same results with
the start-up hook off (``SINKBENCH_LM_EVAL_AUTOLOAD=0`` plus ``--include_path``) as with it on.

Each ``test_patch_*`` fails when lm-eval changes what its patch relies on: then the patch must be revisited, not
the test.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tiny_models import save_tiny_model

from sinkbench.errors import SinkbenchError, UserError
from sinkbench.harness import plugin
from sinkbench.harness.run import tasks_path

if TYPE_CHECKING:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils

FIXTURES = Path(__file__).parents[1] / "fixtures" / "strict"
LM_EVAL = shutil.which("lm_eval", path=str(Path(sys.executable).parent))
NO_WEIGHTS = "sinkbench-test-no-weights"
#: The parts of a results file that describe what was measured (not when, where or how long it took).
MEASURED = ("results", "configs", "versions", "n-shot", "n-samples", "higher_is_better", "group_subtasks")


@pytest.fixture(scope="module")
def no_weights() -> str:
    """The registered name of :class:`NoWeightsLM` (after lm-eval's own backends: a registry holding a name skips
    them)."""
    import lm_eval.models  # noqa: F401
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    class NoWeightsLM(LM):
        """An lm-eval backend that keeps no local transformers model, as vLLM's and the API backends do."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def loglikelihood(self, requests: list[Any]) -> list[Any]:
            raise AssertionError("no request may run before the backend is refused")

        loglikelihood_rolling = generate_until = loglikelihood

    register_model(NO_WEIGHTS)(NoWeightsLM)
    return NO_WEIGHTS


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", "llama")


def _sinkbench_tasks() -> lm_eval.tasks.TaskManager:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils

    return lm_eval.tasks.TaskManager(include_path=str(tasks_path()), include_defaults=False)


def _original(function: Any) -> Any:
    """``function`` without sinkbench's wrapper (and lm-eval's own ``positional_deprecated``)."""
    return inspect.unwrap(function)


# --- the shape of each patched symbol ---------------------------------------------------------------------------


def test_patch_1_task_index_is_looked_up_by_name_and_built_from_the_folders() -> None:
    from lm_eval.tasks import _index, manager

    init = manager.TaskManager.__init__
    assert init.__globals__ is vars(manager) and "TaskIndex" in init.__code__.co_names
    build = inspect.getattr_static(_index.TaskIndex, "build")
    assert isinstance(build, staticmethod)
    assert next(iter(inspect.signature(build.__func__).parameters)) == "paths"
    assert manager.TaskIndex is _index.TaskIndex or issubclass(manager.TaskIndex, _index.TaskIndex)


def test_patch_2_requests_are_served_by_the_attribute_named_after_their_type() -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils
    from lm_eval.api.model import LM

    from sinkbench.harness.request import REQUEST_TYPE, serve_sink_strength

    assert "getattr(lm, reqtype)(cloned_reqs)" in inspect.getsource(_original(lm_eval.evaluator.evaluate))
    assert LM.__dict__.get(REQUEST_TYPE) in (None, serve_sink_strength), (
        "lm-eval now defines sink_strength itself"
    )
    for request_type in ("loglikelihood", "loglikelihood_rolling", "generate_until"):
        assert list(inspect.signature(getattr(LM, request_type)).parameters) == ["self", "requests"]
    assert list(inspect.signature(serve_sink_strength).parameters) == ["lm", "requests"]


def test_patch_3_evaluate_takes_the_model_and_tasks_first_and_is_called_by_name() -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils

    from sinkbench.harness.request import REQUEST_TYPE

    assert list(inspect.signature(lm_eval.evaluator.evaluate).parameters)[:2] == ["lm", "task_dict"]
    simple_evaluate = _original(lm_eval.evaluator.simple_evaluate)
    assert simple_evaluate.__globals__ is vars(lm_eval.evaluator)
    assert "evaluate" in simple_evaluate.__code__.co_names
    task = _sinkbench_tasks().load([REQUEST_TYPE])["tasks"][REQUEST_TYPE]
    assert task.OUTPUT_TYPE == REQUEST_TYPE  # lm-eval keeps the class's type when the config names none
    assert "output_type" not in task.dump_config()


def test_patch_4_stderr_for_metric_is_looked_up_by_name_with_its_two_arguments() -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils
    from lm_eval.api import metrics

    assert list(inspect.signature(metrics.stderr_for_metric).parameters) == ["metric", "bootstrap_iters"]
    callers = [
        function
        for function in vars(lm_eval.evaluator_utils).values()
        if inspect.isfunction(function)
        and function.__globals__ is vars(lm_eval.evaluator_utils)
        and "stderr_for_metric" in function.__code__.co_names
    ]
    assert callers, "lm_eval.evaluator_utils no longer calls stderr_for_metric through its module"


def test_task_patches_are_idempotent() -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils
    from lm_eval.api.model import LM

    from sinkbench.harness.request import REQUEST_TYPE, serve_sink_strength

    plugin.install_task_patches()
    state = (lm_eval.evaluator.evaluate, lm_eval.evaluator_utils.stderr_for_metric, sys.excepthook)
    plugin.install_task_patches()
    assert (lm_eval.evaluator.evaluate, lm_eval.evaluator_utils.stderr_for_metric, sys.excepthook) == state
    assert getattr(LM, REQUEST_TYPE) is serve_sink_strength


# --- errors a caller catches ------------------------------------------------------------------------------------


def test_simple_evaluate_raises_missing_data_as_an_error_a_caller_catches(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils

    from sinkbench.tasks import _data

    monkeypatch.setenv(_data.DATA_DIR_ENV, str(tmp_path / "no-data"))
    try:
        lm_eval.simple_evaluate(
            model="hf",
            model_args=f"pretrained={tiny_dir}",
            tasks=["ifeval_strict"],
            task_manager=_sinkbench_tasks(),
            device="cpu",
        )
    except Exception as error:  # what a notebook or a script around simple_evaluate writes
        caught = error
    else:
        pytest.fail("simple_evaluate ran without the data")
    assert isinstance(caught, _data.DataUnavailable) and isinstance(caught, SinkbenchError)
    assert (
        caught.message
        == f"{_data.DATA_DIR_ENV}={tmp_path / 'no-data'} is set but "
        + str(tmp_path / "no-data" / "ifeval_input_data.jsonl")
        + " does not exist."
    )
    assert caught.fix.startswith("put the original 'ifeval_input_data.jsonl' there")


def test_simple_evaluate_raises_an_unsupported_backend_as_an_error_a_caller_catches(no_weights: str) -> None:
    import lm_eval.evaluator
    import lm_eval.evaluator_utils

    from sinkbench.harness.request import REQUEST_TYPE, BackendUnsupported

    try:
        lm_eval.simple_evaluate(model=no_weights, tasks=[REQUEST_TYPE], task_manager=_sinkbench_tasks())
    except Exception as error:
        caught = error
    else:
        pytest.fail("simple_evaluate probed a backend without weights")
    assert isinstance(caught, BackendUnsupported) and isinstance(caught, SinkbenchError)
    assert "the NoWeightsLM backend keeps no local transformers model" in caught.message
    assert "--model hf" in caught.fix


ONE_LINE_HOOK = """
import sys
from sinkbench.harness.plugin import install_error_hook
from sinkbench.errors import UserError
install_error_hook()
raise UserError("the thing is missing.", "put it there") if sys.argv[1] == "ours" else KeyError("theirs")
"""


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("kind", ["ours", "theirs"])
def test_an_uncaught_sinkbench_error_ends_the_process_as_one_line(kind: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ONE_LINE_HOOK, kind], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 1
    if kind == "ours":
        assert done.stderr == "sinkbench: the thing is missing. Fix: put it there\n"
    else:  # any other exception keeps Python's traceback
        assert done.stderr.startswith("Traceback") and done.stderr.rstrip().endswith("KeyError: 'theirs'")


def test_user_error_carries_message_and_fix() -> None:
    error = UserError("a.json: field x is missing.", "add x")
    assert (error.message, error.fix, str(error)) == (
        "a.json: field x is missing.",
        "add x",
        "a.json: field x is missing. Fix: add x",
    )
    assert str(UserError("one line with its fix")) == "one line with its fix" and isinstance(
        error, ValueError
    )


# --- hook off plus --include_path == hook on --------------------------------------------------------------------


def _stock_run(tiny_dir: Path, cwd: Path, *extra: str, **env: str) -> dict[str, Any]:
    """``lm_eval`` in a fresh process on the tiny model: sink_strength and ifeval_strict (2 fixture prompts)."""
    from sinkbench.tasks import _data, _punkt

    assert LM_EVAL, f"no lm_eval command beside {sys.executable}"
    base = {key: value for key, value in os.environ.items() if key != plugin.AUTOLOAD_ENV}
    environment = {
        **base, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", _data.DATA_DIR_ENV: str(FIXTURES),
        _punkt.NLTK_DATA_ENV: str(cwd / "nltk_data"), **env,
    }  # fmt: skip
    command = [
        LM_EVAL, "--model", "hf", "--model_args", f"pretrained={tiny_dir},dtype=float32", "--device", "cpu",
        "--tasks", "sink_strength,ifeval_strict", "--limit", "2", "--gen_kwargs", "max_gen_toks=8",
        "--output_path", "out", *extra,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = (cwd / "out").glob("**/results_*.json")
    return json.loads(results.read_text(encoding="utf-8"))


@pytest.mark.slow  # lm_eval in fresh interpreters
def test_hook_off_with_include_path_gives_the_same_results(tiny_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    hooked = _stock_run(tiny_dir, tmp_path / "on")
    included = _stock_run(
        tiny_dir, tmp_path / "off", "--include_path", str(tasks_path()), **{plugin.AUTOLOAD_ENV: "0"}
    )
    for part in MEASURED:
        assert hooked.get(part) == included.get(part), part
    assert hooked["n-samples"]["sink_strength"] == {"original": 15, "effective": 15}  # --limit left S whole
    assert hooked["n-samples"]["ifeval_strict"]["effective"] == 2
    assert isinstance(hooked["results"]["sink_strength"]["sink_strength_stderr,none"], float)  # patch 4 held
