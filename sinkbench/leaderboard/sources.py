"""Where the site's sources live: ``mkdocs.yml``, the Jinja2 ``templates/`` and the static ``docs/``, shipped
inside this package (or another folder of the same shape, e.g. in tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The site's sources, shipped inside this package.
SOURCES_DIR = Path(__file__).resolve().parent
#: Where ``sinkbench site build`` looks for committed experiment results by default (in a clone).
EXPERIMENTS_DIR = Path("benchmarks") / "results"


class SourceInvalid(ValueError):
    """A file the site reads besides the submissions (an experiment's results) cannot be used; the message is one
    line naming the file, the field and the fix."""


@dataclass(frozen=True)
class SiteSources:
    """Where the site's sources live (this package's folder unless told otherwise)."""

    root: Path = SOURCES_DIR

    @property
    def config(self) -> Path:
        """``mkdocs.yml`` (Material theme, navigation, Markdown extensions)."""
        return self.root / "mkdocs.yml"

    @property
    def templates(self) -> Path:
        """Jinja2 templates of the generated pages."""
        return self.root / "templates"

    @property
    def docs(self) -> Path:
        """Static pages and assets, and the prose the templates include."""
        return self.root / "docs"

    def repo_url(self) -> str:
        """The repository URL of ``mkdocs.yml`` (its ``repo_url``, set from ``SINKBENCH_REPO_URL``), or ""."""
        from mkdocs.utils.yaml import yaml_load

        with self.config.open(encoding="utf-8") as stream:
            return str(yaml_load(stream).get("repo_url") or "").rstrip("/")

    def check(self) -> None:
        """Raise FileNotFoundError naming the first missing source and how to get it."""
        for path in (self.config, self.templates, self.docs):
            if not path.exists():
                raise FileNotFoundError(
                    f"{path} is missing: the sinkbench installation is incomplete; reinstall sinkbench."
                )
