"""Make the stock ``lm_eval`` find sinkbench's tasks: put their folder (the installed ``sinkbench.tasks``, the
repository's ``harness_tasks/``) among lm-eval's default task paths.

How it is wired, and why it costs nothing until lm-eval loads its tasks:

1. Installing sinkbench (wheel or ``pip install -e``) puts :data:`PTH_NAME` at the root of site-packages;
   ``setup.py`` writes :data:`PTH_LINE` into it. Python runs that line at every start-up: unless
   ``SINKBENCH_LM_EVAL_AUTOLOAD=0``, it puts a small finder at the head of ``sys.meta_path`` and imports
   nothing (not even this module).
2. The finder answers only imports of ``lm_eval.tasks.manager``: it imports this module and calls
   :func:`hooked_spec`, which lets the other finders locate lm-eval's module and wraps its loader so that
   :func:`patch_task_manager` runs right after the module has executed.
3. The patch makes every ``TaskManager`` that includes lm-eval's defaults index lm-eval's tasks, then
   sinkbench's, then the caller's ``include_path``, so a user's task of the same name still wins.

Failures never break an import: they end as one logged warning and an unpatched lm-eval. At module level
this file imports only the standard library: ``setup.py`` runs it at build time to read :data:`PTH_LINE`.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
from collections.abc import Iterable
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
