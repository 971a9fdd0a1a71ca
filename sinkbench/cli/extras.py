"""A command of the base install (``pip install sinkbench``) that needs a package of an optional extra says so in
one line, naming the extra, instead of ending in a ``ModuleNotFoundError`` traceback."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable

#: The import names of each optional extra's packages (pyproject.toml ``[project.optional-dependencies]``);
#: mkdocs-material brings ``mkdocs`` and ``pymdownx`` (pymdown-extensions) with its own ``material``, and
#: mkdocstrings-python's module is ``mkdocstrings_handlers``.
EXTRA_MODULES = {
    "site": ("mkdocs", "material", "pymdownx", "vl_convert", "mkdocstrings", "mkdocstrings_handlers"),
    "merge": ("mergekit",),
}
#: Each of those modules and the extra it comes with.
EXTRA_OF_MODULE = {module: extra for extra, modules in EXTRA_MODULES.items() for module in modules}


def _installed(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def require_extra(extra: str) -> None:
    """Check, before any work, that every package of ``extra`` can be imported; ModuleNotFoundError for the first
    that cannot (:func:`run_needing_extras` reports it)."""
    for module in EXTRA_MODULES[extra]:
        if not _installed(module):
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)


def run_needing_extras(command: str, handler: Callable[[], int]) -> int:
    """``handler()``; when it fails on a package of an optional extra, that extra in one line on stderr, exit 2 (a
    usage error: the command cannot run as installed)."""
    try:
        return handler()
    except ModuleNotFoundError as error:
        extra = EXTRA_OF_MODULE.get((error.name or "").partition(".")[0])
        if extra is None:
            raise
        print(
            f'sinkbench {command} needs the {extra} extra: pip install "sinkbench[{extra}]"', file=sys.stderr
        )
        return 2
