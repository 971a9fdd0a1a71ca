"""The stock ``lm_eval`` finds sinkbench's tasks without ``--include_path`` (sinkbench/harness/plugin.py).

The end-to-end tests start this environment's own ``lm_eval`` and ``python`` in fresh processes, in temporary
folders outside the repository, so they check the hook as installed here (``pip install -e`` in CI); the wheel
test installs a freshly built wheel into a new virtual environment, then uninstalls it.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import types
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import ClassVar

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from tiny_models import save_tiny_model

from sinkbench.harness import plugin
from sinkbench.harness.run import tasks_path

ROOT = Path(__file__).resolve().parents[2]
LM_EVAL = shutil.which("lm_eval", path=str(Path(sys.executable).parent))
#: Prints where a TaskManager given ``include_path=argv[1]`` finds ``sink_strength`` and ``sinkbench_format``.
WHERE = (
    "import sys; from lm_eval.tasks import TaskManager; index = TaskManager(include_path=sys.argv[1]).task_index; "
    "print(index['sink_strength'].yaml_path); print(index['sinkbench_format'].yaml_path)"
)
USER_TASK = 'task: sink_strength\ndataset_path: json\noutput_type: generate_until\ndoc_to_text: "{{q}}"\n'


@pytest.fixture(scope="module")
def hook_installed() -> Path:
    """This environment's start-up file; a stale or missing one fails with the fix."""
    pth = Path(sysconfig.get_path("purelib"), plugin.PTH_NAME)
    installed = pth.read_text(encoding="utf-8") if pth.is_file() else None
    assert installed == plugin.PTH_LINE, (
        f"{pth} is missing or out of date: reinstall sinkbench (pip install -e .)"
    )
    return pth


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", "llama")


def _run(command: list[str | Path], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Run offline in ``cwd``, with the hook on and no data folder unless ``env`` says otherwise."""
    from sinkbench.tasks._data import DATA_DIR_ENV

    base = {key: value for key, value in os.environ.items() if key not in {plugin.AUTOLOAD_ENV, DATA_DIR_ENV}}
    environment = {**base, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", **env}
    command = [str(part) for part in command]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=900)


def _lm_eval(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    assert LM_EVAL, f"no lm_eval command beside {sys.executable}"
    assert ROOT not in cwd.parents, "the run must happen outside the repository"
    return _run([LM_EVAL, "--model", "hf", "--device", "cpu", *args], cwd, **env)


@pytest.mark.slow  # lm_eval in a fresh interpreter
def test_stock_lm_eval_runs_sink_strength(hook_installed: Path, tiny_dir: Path, tmp_path: Path) -> None:
    done = _lm_eval(
        tmp_path,
        *("--model_args", f"pretrained={tiny_dir},dtype=float32", "--tasks", "sink_strength"),
        *("--output_path", "out"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (results_file,) = (tmp_path / "out").glob("**/results_*.json")
    assert isinstance(
        json.loads(results_file.read_text())["results"]["sink_strength"]["sink_strength,none"], float
    )


@pytest.mark.slow  # a fresh interpreter
def test_stock_lm_eval_recognises_the_format_group(
    hook_installed: Path, tiny_dir: Path, tmp_path: Path
) -> None:
    from sinkbench.tasks._data import DATA_DIR_ENV

    done = _lm_eval(
        tmp_path,
        *("--model_args", f"pretrained={tiny_dir}", "--tasks", "sinkbench_format"),
        **{DATA_DIR_ENV: str(tmp_path / "no-data")},
    )
    assert "Tasks not found" not in done.stderr
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(f"sinkbench: {DATA_DIR_ENV}="), done.stderr[-3000:]


@pytest.mark.slow  # a fresh interpreter
def test_autoload_off_leaves_lm_eval_as_shipped(hook_installed: Path, tmp_path: Path) -> None:
    arguments = ("--model_args", "pretrained=unused", "--tasks", "sink_strength")
    done = _lm_eval(tmp_path, *arguments, **{plugin.AUTOLOAD_ENV: "0"})
    assert done.returncode != 0
    assert "Tasks not found: sink_strength" in done.stderr


@pytest.mark.slow  # a fresh interpreter
def test_include_path_task_of_the_same_name_wins(hook_installed: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sink_strength.yaml").write_text(USER_TASK, encoding="utf-8")
    done = _run([sys.executable, "-c", WHERE, mine], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    users, ours = map(Path, done.stdout.split())
    assert users == mine / "sink_strength.yaml"
    assert ours.is_relative_to(tasks_path())


@pytest.mark.slow  # a fresh interpreter
def test_unrelated_python_imports_nothing(hook_installed: Path, tmp_path: Path) -> None:
    code = (
        "import json, sys; print(json.dumps([sorted({name.split('.')[0] for name in sys.modules} & "
        "{'sinkbench', 'harness_tasks', 'lm_eval', 'torch'}), [getattr(f, '__name__', '') for f in sys.meta_path]]))"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    loaded, finders = json.loads(done.stdout)
    assert loaded == []
    assert finders.count("SinkbenchLmEvalFinder") == 1  # installed, idle until lm-eval loads its tasks


@pytest.mark.slow  # a fresh interpreter
def test_a_broken_hook_leaves_lm_eval_working(hook_installed: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "sinkbench" / "harness"
    shadow.mkdir(parents=True)
    (shadow.parent / "__init__.py").write_text("")
    (shadow / "__init__.py").write_text("")
    marker = tmp_path / "hook-ran"
    (shadow / "plugin.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nraise RuntimeError('broken hook')\n"
    )
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sink_strength.yaml").write_text(USER_TASK, encoding="utf-8")
    code = (
        "import sys; from lm_eval.tasks import TaskManager; "
        "print(TaskManager(include_path=sys.argv[1], include_defaults=False).all_tasks)"
    )
    done = _run([sys.executable, "-c", code, mine], tmp_path, PYTHONPATH=str(tmp_path / "shadow"))
    assert marker.exists(), "the start-up finder did not call the (broken) hook"
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "['sink_strength']" and "broken hook" not in done.stderr


def _build_wheel(target: Path) -> Path:
    """A wheel of the repository's tracked and unignored files, built in a copy (the checkout stays clean)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell the project's files from build outputs")
    source = target / "source"
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", target / "dist"]
    assert _run([*wheel, "."], source).returncode == 0
    return next((target / "dist").glob("sinkbench-*.whl"))


@pytest.mark.slow  # builds and installs a wheel
def test_wheel_install_finds_the_tasks_and_uninstall_removes_the_hook(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path).returncode == 0
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python]
    assert _run([*pip, "install", "--no-deps", "--no-index", wheel], tmp_path).returncode == 0
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    packages = Path(_run([python, "-c", purelib], tmp_path).stdout.strip())
    # Dependencies from this environment, as plain path entries after the new environment's own.
    (packages / "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (tmp_path / "mine").mkdir()
    done = _run([python, "-c", WHERE, tmp_path / "mine"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert all(Path(line).is_relative_to(packages) for line in done.stdout.split()), done.stdout
    assert (packages / plugin.PTH_NAME).is_file()
    assert _run([*pip, "uninstall", "--yes", "sinkbench"], tmp_path).returncode == 0
    assert not (packages / plugin.PTH_NAME).exists()


class RecordingIndex:
    """Stands in for lm-eval's ``TaskIndex``: records the folders it is asked to index."""

    built: ClassVar[list[Path]] = []

    @staticmethod
    def build(paths: list[Path], **kwargs: object) -> dict:
        RecordingIndex.built = list(paths)
        return {}


def _manager(tmp_path: Path) -> types.ModuleType:
    """A stand-in ``lm_eval.tasks.manager`` whose defaults folder is ``tmp_path / "tasks"``."""
    manager = types.ModuleType(plugin.TARGET)
    manager.__file__ = str(tmp_path / "tasks" / "manager.py")
    manager.TaskIndex = RecordingIndex
    return manager


def test_patched_index_puts_sinkbench_between_defaults_and_include_path(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert plugin.patch_task_manager(manager)
    manager.TaskIndex().build([tmp_path / "tasks", tmp_path / "mine"])
    assert RecordingIndex.built == [tmp_path / "tasks", tasks_path(), tmp_path / "mine"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["defaults"], ["defaults", "ours"]),
        (["defaults", "mine"], ["defaults", "ours", "mine"]),
        (["mine"], ["mine"]),  # include_defaults=False
        (["defaults", "ours"], ["defaults", "ours"]),  # sinkbench eval's --include_path: not twice
    ],
)
def test_task_paths(tmp_path: Path, given: list[str], expected: list[str]) -> None:
    paths = plugin.task_paths([tmp_path / name for name in given], tmp_path / "defaults", tmp_path / "ours")
    assert paths == [tmp_path / name for name in expected]


def test_untested_lm_eval_gets_one_warning_and_no_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.5.0")
    manager = _manager(tmp_path)
    with caplog.at_level(logging.WARNING, logger=plugin.__name__):
        assert not plugin.patch_task_manager(manager)
    assert manager.TaskIndex is RecordingIndex
    (record,) = caplog.records
    expected = f"lm-eval 0.5.0 is outside the versions its task hook is tested with ({plugin.LM_EVAL_TESTED})"
    assert expected in record.getMessage()


def test_stands_aside_when_lm_eval_reads_the_entry_point(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = _manager(tmp_path)
    manager.TASKS_ENTRY_POINT_GROUP = plugin.ENTRY_POINT_GROUP
    with caplog.at_level(logging.WARNING, logger=plugin.__name__):
        assert not plugin.patch_task_manager(manager)
    assert manager.TaskIndex is RecordingIndex and not caplog.records


def test_a_failing_patch_is_one_warning_not_an_import_error(caplog: pytest.LogCaptureFixture) -> None:
    class Loader:
        def create_module(self, spec: ModuleSpec) -> None:
            return None

        def exec_module(self, module: types.ModuleType) -> None:
            module.executed = True  # no TaskIndex: the patch fails

    module = types.ModuleType(plugin.TARGET)
    module.__spec__ = ModuleSpec(plugin.TARGET, None)
    loader = Loader()
    with caplog.at_level(logging.WARNING, logger=plugin.__name__):
        plugin.PatchingLoader(loader).exec_module(module)
    assert module.executed and module.__loader__ is loader and module.__spec__.loader is loader
    (record,) = caplog.records
    assert record.getMessage().startswith("sinkbench: could not add its tasks to lm-eval (AttributeError")


def test_hooked_spec_wraps_lm_evals_loader_unless_off(
    hook_installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lm_eval.tasks

    (finder,) = [f for f in sys.meta_path if getattr(f, "__name__", "") == "SinkbenchLmEvalFinder"]
    spec = plugin.hooked_spec(finder, plugin.TARGET, lm_eval.tasks.__path__)
    assert type(spec.loader) is plugin.PatchingLoader and spec.origin.endswith("manager.py")
    assert type(spec.loader.loader) is not plugin.PatchingLoader
    monkeypatch.setenv(plugin.AUTOLOAD_ENV, "0")
    assert plugin.hooked_spec(finder, plugin.TARGET, lm_eval.tasks.__path__) is None


@pytest.mark.slow  # a fresh interpreter
def test_tasks_are_declared_under_the_proposed_entry_point_group(
    hook_installed: Path, tmp_path: Path
) -> None:
    # Resolved as the proposal's lm-eval would: the entry point's package, then that package's folder.
    code = (
        "import importlib.metadata as md, importlib.util; "
        f"(value,) = [ep.value for ep in md.entry_points(group={plugin.ENTRY_POINT_GROUP!r}) if ep.name == 'sinkbench']; "
        "print(importlib.util.find_spec(value).submodule_search_locations[0])"
    )
    done = _run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.strip()).resolve() == tasks_path()


def test_tested_range_is_the_lm_eval_pin() -> None:
    (pin,) = re.findall(r'"(lm-eval[^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert Requirement(pin).specifier == SpecifierSet(plugin.LM_EVAL_TESTED)
