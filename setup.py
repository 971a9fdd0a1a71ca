"""Build glue for the one file pyproject.toml cannot place: ``sinkbench-lm-eval.pth`` at the root of site-packages.

That file lets the stock ``lm_eval`` find sinkbench's tasks (see ``sinkbench/harness/plugin.py``, which holds
its text and is read here without importing sinkbench or its dependencies). In a wheel it sits at the root,
so pip installs it beside the packages and ``pip uninstall`` removes it. ``pip install -e`` discards the
build folder, so there it is written into the editable wheel directly (``install_lib``), as setuptools does
with scripts and data files. Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import runpy
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PLUGIN = runpy.run_path(str(Path(__file__).resolve().parent / "sinkbench" / "harness" / "plugin.py"))


class BuildPyWithPth(build_py):
    """``build_py`` that also writes the start-up ``.pth`` file at the root of what gets installed."""

    def run(self) -> None:
        """Build the packages, then write the ``.pth`` file."""
        super().run()
        root = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        Path(root).mkdir(parents=True, exist_ok=True)
        Path(root, PLUGIN["PTH_NAME"]).write_text(PLUGIN["PTH_LINE"], encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithPth})
