"""Build glue for what pyproject.toml cannot say: where two top-level folders install, and two files it cannot place.

* The repository's top-level ``harness_tasks/`` (lm-eval task families) installs as ``sinkbench.tasks``: a name
  inside sinkbench's own namespace instead of a generic top-level package in site-packages.
* The repository's top-level ``site/`` (the leaderboard's templates and docs) installs as the
  package ``sinkbench.site``, and the top-level ``mkdocs.yml`` beside it as ``sinkbench/mkdocs.yml``: the wheel
  then holds ``mkdocs.yml`` and ``site/`` side by side, as the repository does, so an installed sinkbench builds
  the site with the same configuration (:mod:`sinkbench.leaderboard.sources`). An editable install maps
  ``sinkbench.site`` to the checkout's ``site/`` and reads the checkout's ``mkdocs.yml``: one copy of each.
* ``sinkbench-lm-eval.pth`` at the root of site-packages lets the stock ``lm_eval`` find sinkbench's tasks (see
  ``sinkbench/harness/plugin.py``, which holds its text and is read here without importing sinkbench or its
  dependencies). In a wheel it sits at the root, so pip installs it beside the packages and ``pip uninstall``
  removes it. ``pip install -e`` discards the build folder, so there it is written into the editable wheel
  directly (``install_lib``), as setuptools does with scripts and data files.

Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PLUGIN = runpy.run_path(str(ROOT / "sinkbench" / "harness" / "plugin.py"))
#: Installed package name -> the repository folder it comes from.
MAPPED = {"sinkbench.site": "site", "sinkbench.tasks": "harness_tasks"}
#: The site's configuration, installed beside ``sinkbench.site``.
MKDOCS_CONFIG = "mkdocs.yml"


class BuildPyWithPth(build_py):
    """``build_py`` that also places ``mkdocs.yml`` and the start-up ``.pth`` file."""

    def run(self) -> None:
        """Build the packages, then write the ``.pth`` file (and, into a wheel, ``mkdocs.yml``)."""
        super().run()
        root = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        Path(root).mkdir(parents=True, exist_ok=True)
        Path(root, PLUGIN["PTH_NAME"]).write_text(PLUGIN["PTH_LINE"], encoding="utf-8")
        if not self.editable_mode:
            shutil.copyfile(ROOT / MKDOCS_CONFIG, Path(self.build_lib, "sinkbench", MKDOCS_CONFIG))


setup(
    packages=[
        *find_packages(include=["sinkbench", "sinkbench.*"]),
        *MAPPED,
        *(f"sinkbench.tasks.{name}" for name in find_packages(where=MAPPED["sinkbench.tasks"])),
    ],
    package_dir=MAPPED,
    cmdclass={"build_py": BuildPyWithPth},
)
