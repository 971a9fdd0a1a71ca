"""sinkbench's lm-eval adapter: every change sinkbench makes to lm-evaluation-harness at run time, in one module.

sinkbench uses lm-eval's public API elsewhere (``ConfigurableTask``, ``Instance``, ``TaskManager``, the ``LM`` and
``CachingLM`` wrappers' attributes, and ``lm_eval.__main__.cli_evaluate`` for ``sinkbench eval``); what that API
cannot do for the stock command line
(``lm_eval --model hf --model_args pretrained=DIR --tasks sink_strength,ifeval_strict ...``) is done here, by the
patches below. ``tests/harness/test_lm_eval_adapter.py`` fails when the shape of a patched symbol changes.

1. **Task paths** (``lm_eval.tasks.manager.TaskIndex``, subclassed so that ``build`` indexes sinkbench's task folder
   right after lm-eval's own, before any ``--include_path``). Why: an installed package has no way to add tasks to
   the stock ``lm_eval``, which otherwise ends in "Tasks not found". Installed by the start-up hook below.
   Upstream replacement: the ``lm_eval.tasks`` entry-point group of lm-evaluation-harness pull request 4015, which
   sinkbench already declares (``pyproject.toml``); an lm-eval that reads it gets no patch (:func:`patch_task_manager`).
2. **The request type** (``lm_eval.api.model.LM.sink_strength``). Why: lm-eval serves each request with
   ``getattr(lm, request.request_type)(requests)`` and its wrappers answer only its own types; S is a probe pass
   on the model lm-eval loaded, neither a log-likelihood nor a generation. Upstream replacement: none yet (a
   registry of request types, or a task hook handed the loaded model, would do).
3. **The backend check** (``lm_eval.evaluator.evaluate``, wrapped). Why: a backend that cannot be probed (vLLM,
   API models, tensor parallelism) must be refused before any request of any task runs, or a generation task listed
   before ``sink_strength`` runs for hours first. Upstream replacement: none (lm-eval checks a model against its
   tasks only for multimodal input; a per-task model check would do).
4. **The standard error** (``lm_eval.evaluator_utils.stderr_for_metric``, wrapped). Why: lm-eval computes a
   metric's ``_stderr`` only for the aggregations on its own list, and S's standard error must resample whole
   prompts; an aggregation that carries ``sinkbench_stderr`` computes its own, every other keeps lm-eval's.
   Upstream replacement: none (a standard-error function declared beside the aggregation would do).
5. **One-line errors** (Python's ``sys.excepthook``, not lm-eval's). Why: lm-eval's command line lets every
   exception end in a traceback; a :class:`~sinkbench.errors.SinkbenchError` that nothing caught (missing data, an
   unsupported backend) prints as ``sinkbench: <message>`` with exit status 1. A caller of
   ``lm_eval.simple_evaluate`` still catches the error itself. Upstream replacement: none.

6. **The output folder of a GGUF-cache model** (``lm_eval.loggers.evaluation_tracker.GeneralConfigTracker.
   log_experiment_args``, wrapped). Why: lm-eval names the folder under ``--output_path`` after ``pretrained=``
   with its slashes replaced, so the folder of sinkbench's GGUF cache that ``sinkbench screen --print-model-dir``
   prints gives ``__root__.cache__sinkbench__gguf__b179c9523d0e6a0f98a330c7``; a run on such a folder is named
   after the GGUF file instead (``SmolLM2-135M-Instruct.Q4_1``). Every other model keeps lm-eval's name.
   Upstream replacement: none (an option naming the output folder would do).

Patch 1 is made by the start-up hook, so that the stock command finds the tasks; patches 2 to 6 by the tasks
themselves when lm-eval builds them (:func:`install_task_patches`, :func:`install_error_hook`), so they hold with the
hook off (``SINKBENCH_LM_EVAL_AUTOLOAD=0`` and ``--include_path``) as well. Each is idempotent.

How the hook is wired, and why it costs nothing until lm-eval loads its tasks:

1. Installing sinkbench (wheel or ``pip install -e``) puts :data:`PTH_NAME` at the root of site-packages;
   ``setup.py`` writes :data:`PTH_LINE` into it. Python runs that line at every start-up: unless
   ``SINKBENCH_LM_EVAL_AUTOLOAD=0``, it puts a small finder at the head of ``sys.meta_path`` and imports
   nothing (not even this module).
2. The finder answers only imports of ``lm_eval.tasks.manager``: it imports this module and calls
   :func:`hooked_spec`, which lets the other finders locate lm-eval's module and wraps its loader so that
   :func:`patch_task_manager` runs right after the module has executed.
3. The patch makes every ``TaskManager`` that includes lm-eval's defaults index lm-eval's tasks, then
   sinkbench's, then the caller's ``include_path``, so a user's task of the same name still wins.

Failures of the hook never break an import: they end as one logged warning and an unpatched lm-eval. At module
level this file imports only the standard library: ``setup.py`` runs it at build time to read :data:`PTH_LINE`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

#: Set to ``0`` to turn the hook off (read at start-up, and again when lm-eval loads its task manager).
AUTOLOAD_ENV = "SINKBENCH_LM_EVAL_AUTOLOAD"
#: lm-eval versions the hook is tested with; for any other it logs one warning and patches nothing.
LM_EVAL_TESTED = ">=0.4.13,<0.5"
#: The module whose ``TaskIndex`` the hook patches.
TARGET = "lm_eval.tasks.manager"
#: Entry-point group of lm-eval's task-suite plugin proposal (EleutherAI/lm-evaluation-harness pull request
#: 4015, ``TASKS_ENTRY_POINT_GROUP``). sinkbench declares its tasks there; an lm-eval that reads it finds
#: them without this hook, which then stands aside.
ENTRY_POINT_GROUP = "lm_eval.tasks"
#: Name of the start-up file at the root of site-packages.
PTH_NAME = "sinkbench-lm-eval.pth"

_FINDER_SOURCE = f'''
class SinkbenchLmEvalFinder:
    """Hands imports of {TARGET} to sinkbench.harness.plugin.hooked_spec; None for every other name."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != {TARGET!r}:
            return None
        try:
            from sinkbench.harness.plugin import hooked_spec

            return hooked_spec(cls, name, path, target)
        except Exception:
            return None


if all(getattr(finder, "__name__", None) != "SinkbenchLmEvalFinder" for finder in sys.meta_path):
    sys.meta_path.insert(0, SinkbenchLmEvalFinder)
'''
#: The line Python runs from :data:`PTH_NAME` at every start-up: the finder above (once, however often site
#: runs the file), unless the hook is off.
PTH_LINE = (
    f"import os, sys; os.environ.get({AUTOLOAD_ENV!r}) == '0' or "
    f"exec({_FINDER_SOURCE!r}, {{'__name__': 'sinkbench_lm_eval_pth', 'sys': sys}})\n"
)

_FALLBACK = (
    f'pass --include_path "$(sinkbench tasks-path)" to lm_eval, or set {AUTOLOAD_ENV}=0 to silence this'
)
_log = logging.getLogger(__name__)


def autoload_enabled() -> bool:
    """Whether the hook is on: ``SINKBENCH_LM_EVAL_AUTOLOAD`` is anything but ``0`` (on when unset)."""
    return os.environ.get(AUTOLOAD_ENV) != "0"


def hooked_spec(finder: object, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
    """``name``'s spec from the finders other than ``finder``, its loader wrapped to patch the module after it runs.

    Args:
        finder: The start-up finder that called this (skipped, so the search does not come back here).
        name, path, target: The arguments of ``find_spec``.

    Returns:
        The wrapped spec, or None (the import goes on untouched) when the hook is off or no finder has a
        loader that executes modules.
    """
    if not autoload_enabled():
        return None
    for other in sys.meta_path:
        find_spec = getattr(other, "find_spec", None)
        if other is finder or find_spec is None:
            continue
        spec = find_spec(name, path, target)
        if spec is None:
            continue
        if not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = PatchingLoader(spec.loader)
        return spec
    return None


class PatchingLoader:
    """Runs a module with its own loader, then :func:`patch_task_manager`; the module keeps its own loader."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        """Whatever the wrapped loader creates (None: the default module)."""
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        """Execute the module; a failure of the patch is one warning, never an import error."""
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        try:
            patch_task_manager(module)
        except Exception as error:
            _log.warning(
                "sinkbench: could not add its tasks to lm-eval (%s: %s); %s",
                type(error).__name__,
                error,
                _FALLBACK,
            )


def patch_task_manager(manager: ModuleType) -> bool:
    """Make ``manager``'s ``TaskManager`` index sinkbench's tasks right after lm-eval's own.

    Args:
        manager: The executed ``lm_eval.tasks.manager`` module.

    Returns:
        Whether it patched: not when lm-eval reads :data:`ENTRY_POINT_GROUP` itself, nor (after one warning)
        when lm-eval's version is outside :data:`LM_EVAL_TESTED`.
    """
    if getattr(manager, "TASKS_ENTRY_POINT_GROUP", None) == ENTRY_POINT_GROUP:
        return False
    version = importlib.metadata.version("lm_eval")
    if not lm_eval_tested(version):
        _log.warning(
            "sinkbench: lm-eval %s is outside the versions its task hook is tested with (%s), so its tasks "
            "are not added; %s",
            version,
            LM_EVAL_TESTED,
            _FALLBACK,
        )
        return False
    from sinkbench.harness.run import tasks_path

    manager.TaskIndex = _index_with(manager.TaskIndex, Path(manager.__file__).resolve().parent, tasks_path())
    return True


def lm_eval_tested(version: str) -> bool:
    """Whether an lm-eval version lies in :data:`LM_EVAL_TESTED` (development releases count)."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(LM_EVAL_TESTED).contains(version, prereleases=True)


def task_paths(paths: Iterable[str | Path], defaults: Path, ours: Path) -> list[Path]:
    """``paths`` with ``ours`` right after lm-eval's ``defaults`` folder, so any include_path after it wins.

    Args:
        paths: The folders a ``TaskManager`` is about to index, in order (later ones override earlier).
        defaults: lm-eval's own task folder (present unless ``include_defaults=False``).
        ours: the folder of sinkbench's tasks (:func:`sinkbench.harness.run.tasks_path`).

    Returns:
        The folders to index: unchanged when ``defaults`` is absent or ``ours`` is already listed.
    """
    listed = [Path(path) for path in paths]
    resolved = [path.resolve() for path in listed]
    if defaults not in resolved or ours in resolved:
        return listed
    after = resolved.index(defaults) + 1
    return [*listed[:after], ours, *listed[after:]]


def _index_with(index: type, defaults: Path, ours: Path) -> type:
    """A subclass of lm-eval's ``TaskIndex`` whose ``build`` indexes ``ours`` right after ``defaults``."""

    class SinkbenchTaskIndex(index):
        @staticmethod
        def build(paths: Iterable[Path], **kwargs: Any) -> Any:
            return index.build(task_paths(paths, defaults, ours), **kwargs)

    return SinkbenchTaskIndex


def install_task_patches() -> None:
    """Install patches 2 to 6 of the module docstring, which the ``sink_strength`` task needs. Idempotent."""
    from sinkbench.harness.request import REQUEST_TYPE, probed_model, serve_sink_strength

    _serve_request_type(REQUEST_TYPE, serve_sink_strength)
    _check_backend_first(REQUEST_TYPE, probed_model)
    _stderr_from_aggregation()
    install_error_hook()
    name_gguf_cache_runs()


def name_gguf_cache_runs() -> None:
    """Patch 6: a run whose ``pretrained=`` is a folder of sinkbench's GGUF cache writes its results into a folder
    named after the GGUF file (:func:`sinkbench.models.cached_gguf`), not after the cache folder's absolute path.
    Installed by every sinkbench task (the strict suite's too, ``harness_tasks/_data.py``). Idempotent."""
    from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lm_eval.utils import sanitize_model_name

    from sinkbench.models import cached_gguf

    original = GeneralConfigTracker.log_experiment_args
    if getattr(original, "sinkbench", False):
        return

    @functools.wraps(original)
    def log_experiment_args(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        cached = cached_gguf(Path(self.model_name)) if self.model_name else None
        if cached is not None:
            self.model_name_sanitized = sanitize_model_name(cached.gguf.stem)

    log_experiment_args.sinkbench = True
    GeneralConfigTracker.log_experiment_args = log_experiment_args


def _serve_request_type(request_type: str, handler: Callable[[Any, list[Any]], list[Any]]) -> None:
    """Patch 2: every lm-eval model wrapper answers ``request_type`` requests with ``handler``."""
    from lm_eval.api.model import LM

    if getattr(LM, request_type, None) is not handler:
        setattr(LM, request_type, handler)


def _tasks_in(task_dict: Any) -> Iterator[Any]:
    """Every task object of lm-eval's task dictionary (``{"tasks": ...}`` or the older nested form)."""
    for value in task_dict.values() if isinstance(task_dict, dict) else ():
        if isinstance(value, dict):
            yield from _tasks_in(value)
        else:
            yield value


def _check_backend_first(request_type: str, check: Callable[[Any], Any]) -> None:
    """Patch 3: ``lm_eval.evaluator.evaluate`` calls ``check(lm)`` before it runs any request, when the run holds a
    task of ``request_type`` (``check`` raises to refuse the backend)."""
    import lm_eval.evaluator

    original = lm_eval.evaluator.evaluate
    if getattr(original, "sinkbench", False):
        return

    @functools.wraps(original)
    def evaluate(*args: Any, **kwargs: Any) -> Any:
        lm = kwargs["lm"] if "lm" in kwargs else args[0]
        task_dict = kwargs["task_dict"] if "task_dict" in kwargs else args[1]
        if any(getattr(task, "OUTPUT_TYPE", None) == request_type for task in _tasks_in(task_dict)):
            check(lm)
        return original(*args, **kwargs)

    evaluate.sinkbench = True
    lm_eval.evaluator.evaluate = evaluate


def _stderr_from_aggregation() -> None:
    """Patch 4: an aggregation function that carries ``sinkbench_stderr(items, resamples)`` computes its own
    ``_stderr`` with lm-eval's ``--bootstrap_iters``; every other aggregation keeps lm-eval's estimator."""
    import lm_eval.evaluator_utils

    original = lm_eval.evaluator_utils.stderr_for_metric
    if getattr(original, "sinkbench", False):
        return

    def stderr_for_metric(metric: Callable, bootstrap_iters: int) -> Callable[[Sequence], float] | None:
        own = getattr(metric, "sinkbench_stderr", None)
        if own is None:
            return original(metric=metric, bootstrap_iters=bootstrap_iters)
        return None if bootstrap_iters <= 0 else (lambda items: own(items, bootstrap_iters))

    stderr_for_metric.sinkbench = True
    lm_eval.evaluator_utils.stderr_for_metric = stderr_for_metric


def install_error_hook() -> None:
    """Patch 5: a :class:`~sinkbench.errors.SinkbenchError` that reaches the top of the process uncaught prints as
    one line, ``sinkbench: <message>``, on stderr (Python then exits with status 1); any other exception goes to the
    hook that was there before. Idempotent."""
    previous = sys.excepthook
    if getattr(previous, "sinkbench", False):
        return

    def excepthook(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
        from sinkbench.errors import SinkbenchError

        if isinstance(error, SinkbenchError):
            print(f"sinkbench: {' '.join(str(error).split())}", file=sys.stderr)
        else:
            previous(kind, error, traceback)

    excepthook.sinkbench = True
    sys.excepthook = excepthook
