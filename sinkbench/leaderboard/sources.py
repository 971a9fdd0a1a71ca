"""Where the site's sources live: ``mkdocs.yml`` and ``site/`` (Jinja2 ``templates/``, static ``docs/``) side by
side, at the top of the repository; the wheel installs them side by side too, as ``sinkbench/mkdocs.yml`` and
``sinkbench.site`` (see setup.py). Tests may point at another folder of the same shape."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sinkbench.site

#: The folder holding ``mkdocs.yml`` and ``site/``: the repository (checkout, editable install), or the
#: installed ``sinkbench`` package of a wheel.
SOURCES_DIR = Path(sinkbench.site.__file__).resolve().parent.parent
#: Where ``sinkbench site build`` looks for the experiments' pages by default (in a clone).
EXPERIMENTS_DIR = Path("experiments")


@dataclass(frozen=True)
class SiteSources:
    """Where the site's sources live (:data:`SOURCES_DIR` unless told otherwise)."""

    root: Path = SOURCES_DIR

    @property
    def config(self) -> Path:
        """``mkdocs.yml``: the site's one configuration (theme, navigation, Markdown extensions, plugins)."""
        return self.root / "mkdocs.yml"

    @property
    def templates(self) -> Path:
        """Jinja2 templates of the generated pages."""
        return self.root / "site" / "templates"

    @property
    def docs(self) -> Path:
        """Static pages and assets, and the prose the templates include (MkDocs' ``docs_dir``)."""
        return self.root / "site" / "docs"

    def check(self) -> None:
        """Raise FileNotFoundError naming the first missing source and how to get it."""
        for path in (self.config, self.templates, self.docs):
            if not path.exists():
                raise FileNotFoundError(
                    f"{path} is missing: the sinkbench installation is incomplete; reinstall sinkbench."
                )
