"""sinkbench's lm-eval adapter: every change sinkbench makes to lm-evaluation-harness at run time, in one module.

sinkbench otherwise uses lm-eval's public API; what that API cannot do for the stock command line is done by the
patches below (``tests/harness/test_lm_eval_adapter.py`` fails when the shape of a patched symbol changes):

1. **Task paths** (``lm_eval.tasks.manager.TaskIndex``, subclassed so that ``build`` indexes sinkbench's tasks right
   after lm-eval's own, before any ``--include_path``): an installed package cannot otherwise add tasks to the
   stock ``lm_eval``. Upstream replacement: the ``lm_eval.tasks`` entry-point group of lm-evaluation-harness pull
   request 4015, which sinkbench already declares; an lm-eval that reads it gets no patch.
2. **The request type** (``lm_eval.api.model.LM.sink_strength``): lm-eval serves a request with
   ``getattr(lm, request.request_type)(requests)``, and S is a probe pass, neither a log-likelihood nor a generation.
3. **The backend check** (``lm_eval.evaluator.evaluate``, wrapped): a backend that cannot be probed (vLLM, API
   models, tensor parallelism) is refused before any request of any task runs, not after hours of generation.
4. **The standard error** (``lm_eval.evaluator_utils.stderr_for_metric``, wrapped): an aggregation that carries
   ``sinkbench_stderr`` computes its own ``_stderr`` (S resamples whole prompts); every other keeps lm-eval's.
5. **One-line errors** (``sys.excepthook``): an uncaught :class:`~sinkbench.errors.SinkbenchError` prints as
   ``sinkbench: <message>``, exit status 1, instead of a traceback.
6. **The output folder of a GGUF-cache model** (``GeneralConfigTracker.log_experiment_args``, wrapped): a run on a
   folder of sinkbench's GGUF cache is named after the GGUF file (``SmolLM2-135M-Instruct.Q4_1``), not after the
   cache folder's path (``__root__.cache__sinkbench__gguf__b179...``).

Patches 2 to 6 have no upstream replacement yet. Patch 1 is made by the start-up hook; patches 2 to 6 by the tasks
when lm-eval builds them (:func:`install_task_patches`), so they hold with the hook off
(``SINKBENCH_LM_EVAL_AUTOLOAD=0`` and ``--include_path``) too. Each is idempotent.

The hook: installing sinkbench puts :data:`PTH_NAME` (holding :data:`PTH_LINE`, written by ``setup.py``) at the root
of site-packages. At every start-up it puts a small finder at the head of ``sys.meta_path``, importing nothing. The
finder answers only imports of ``lm_eval.tasks.manager``: :func:`hooked_spec` wraps that module's loader so that
:func:`patch_task_manager` runs right after it executes. A failure of the hook ends as one logged warning and an
unpatched lm-eval, never an import error. At module level this file imports only the standard library
(``setup.py`` runs it at build time).
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


def hooked_spec(finder: object, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
    """``name``'s spec from the finders other than ``finder`` (the start-up finder), its loader wrapped to patch the
    module after it runs; None (the import goes on untouched) when the hook is off or no loader executes modules."""
    if os.environ.get(AUTOLOAD_ENV) == "0":
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
    """Make the executed ``lm_eval.tasks.manager``'s ``TaskManager`` index sinkbench's tasks right after lm-eval's.

    Returns whether it patched: not when lm-eval reads :data:`ENTRY_POINT_GROUP` itself, nor (after one warning)
    when lm-eval's version is outside :data:`LM_EVAL_TESTED` (development releases count as inside).
    """
    from packaging.specifiers import SpecifierSet

    if getattr(manager, "TASKS_ENTRY_POINT_GROUP", None) == ENTRY_POINT_GROUP:
        return False
    version = importlib.metadata.version("lm_eval")
    if not SpecifierSet(LM_EVAL_TESTED).contains(version, prereleases=True):
        _log.warning(
            "sinkbench: lm-eval %s is outside the versions its task hook is tested with (%s), so its tasks "
            "are not added; %s",
            version,
            LM_EVAL_TESTED,
            _FALLBACK,
        )
        return False
    from sinkbench.harness.run import tasks_path

    defaults, ours, index = Path(manager.__file__).resolve().parent, tasks_path(), manager.TaskIndex

    class SinkbenchTaskIndex(index):
        @staticmethod
        def build(paths: Iterable[Path], **kwargs: Any) -> Any:
            return index.build(task_paths(paths, defaults, ours), **kwargs)

    manager.TaskIndex = SinkbenchTaskIndex
    return True


def task_paths(paths: Iterable[str | Path], defaults: Path, ours: Path) -> list[Path]:
    """The folders a ``TaskManager`` indexes (later ones override earlier) with ``ours`` right after lm-eval's
    ``defaults``, so any include_path after it wins; unchanged when ``defaults`` is absent or ``ours`` listed."""
    listed = [Path(path) for path in paths]
    resolved = [path.resolve() for path in listed]
    if defaults not in resolved or ours in resolved:
        return listed
    after = resolved.index(defaults) + 1
    return [*listed[:after], ours, *listed[after:]]


def install_task_patches() -> None:
    """Install patches 2 to 6 of the module docstring, which the ``sink_strength`` task needs. Idempotent."""
    from lm_eval.api.model import LM

    from sinkbench.harness.request import REQUEST_TYPE, probed_model, serve_sink_strength

    setattr(LM, REQUEST_TYPE, serve_sink_strength)
    _check_backend_first(REQUEST_TYPE, probed_model)
    _stderr_from_aggregation()
    install_error_hook()
    name_gguf_cache_runs()


def _patch(owner: Any, name: str, wrap: Callable[[Callable], Callable]) -> None:
    """Replace ``owner.name`` by ``wrap(original)``, marked, unless it is already sinkbench's (idempotent)."""
    original = getattr(owner, name)
    if not getattr(original, "sinkbench", False):
        patched = wrap(original)
        patched.sinkbench = True
        setattr(owner, name, patched)


def name_gguf_cache_runs() -> None:
    """Patch 6: a run whose ``pretrained=`` is a folder of sinkbench's GGUF cache writes its results into a folder
    named after the GGUF file (:func:`sinkbench.models.cached_gguf`). Installed by every sinkbench task."""
    from lm_eval.loggers.evaluation_tracker import GeneralConfigTracker
    from lm_eval.utils import sanitize_model_name

    from sinkbench.models import cached_gguf

    def wrap(original: Callable) -> Callable:
        @functools.wraps(original)
        def log_experiment_args(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            cached = cached_gguf(Path(self.model_name)) if self.model_name else None
            if cached is not None:
                self.model_name_sanitized = sanitize_model_name(cached.gguf.stem)

        return log_experiment_args

    _patch(GeneralConfigTracker, "log_experiment_args", wrap)


def _tasks_in(task_dict: Any) -> Iterator[Any]:
    """Every task object of lm-eval's task dictionary (``{"tasks": ...}`` or the older nested form)."""
    for value in task_dict.values() if isinstance(task_dict, dict) else ():
        if isinstance(value, dict):
            yield from _tasks_in(value)
        else:
            yield value


def _check_backend_first(request_type: str, check: Callable[[Any], Any]) -> None:
    """Patch 3: ``lm_eval.evaluator.evaluate`` calls ``check(lm)`` (which raises to refuse the backend) before it
    runs any request, when the run holds a task of ``request_type``."""
    import lm_eval.evaluator

    def wrap(original: Callable) -> Callable:
        @functools.wraps(original)
        def evaluate(*args: Any, **kwargs: Any) -> Any:
            lm = kwargs["lm"] if "lm" in kwargs else args[0]
            task_dict = kwargs["task_dict"] if "task_dict" in kwargs else args[1]
            if any(getattr(task, "OUTPUT_TYPE", None) == request_type for task in _tasks_in(task_dict)):
                check(lm)
            return original(*args, **kwargs)

        return evaluate

    _patch(lm_eval.evaluator, "evaluate", wrap)


def _stderr_from_aggregation() -> None:
    """Patch 4: an aggregation function that carries ``sinkbench_stderr(items, resamples)`` computes its own
    ``_stderr`` with lm-eval's ``--bootstrap_iters``; every other aggregation keeps lm-eval's estimator."""
    import lm_eval.evaluator_utils

    def wrap(original: Callable) -> Callable:
        def stderr_for_metric(metric: Callable, bootstrap_iters: int) -> Callable[[Sequence], float] | None:
            own = getattr(metric, "sinkbench_stderr", None)
            if own is None:
                return original(metric=metric, bootstrap_iters=bootstrap_iters)
            return None if bootstrap_iters <= 0 else (lambda items: own(items, bootstrap_iters))

        return stderr_for_metric

    _patch(lm_eval.evaluator_utils, "stderr_for_metric", wrap)


def install_error_hook() -> None:
    """Patch 5: an uncaught :class:`~sinkbench.errors.SinkbenchError` prints as one line, ``sinkbench: <message>``,
    on stderr (exit status 1); any other exception goes to the hook that was there before. Idempotent."""

    def wrap(previous: Callable) -> Callable:
        def excepthook(kind: type[BaseException], error: BaseException, traceback: Any) -> None:
            from sinkbench.errors import SinkbenchError

            if isinstance(error, SinkbenchError):
                print(f"sinkbench: {' '.join(str(error).split())}", file=sys.stderr)
            else:
                previous(kind, error, traceback)

        return excepthook

    _patch(sys, "excepthook", wrap)
