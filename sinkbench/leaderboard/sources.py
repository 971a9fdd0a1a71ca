"""Where the site's sources live: ``mkdocs.yml`` and ``site/`` (Jinja2 ``templates/``, static ``docs/``) side by
side, at the top of the repository; the wheel installs them side by side too, as ``sinkbench/mkdocs.yml`` and
``sinkbench.site`` (see setup.py). Tests may point at another folder of the same shape."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

import sinkbench.site
from sinkbench.errors import UserError
from sinkbench.safe_io import UnsafeFileError, read_json

Schema = TypeVar("Schema", bound=BaseModel)

#: The folder holding ``mkdocs.yml`` and ``site/``: the repository (checkout, editable install), or the
#: installed ``sinkbench`` package of a wheel.
SOURCES_DIR = Path(sinkbench.site.__file__).resolve().parent.parent
#: Where ``sinkbench site build`` looks for committed experiment results by default (in a clone).
EXPERIMENTS_DIR = Path("benchmarks") / "results"


class SourceInvalid(UserError):
    """A file the site reads besides the submissions (an experiment's results) cannot be used; the message is one
    line naming the file, the field and the fix."""


def read_results(schema: type[Schema], path: Path, shown: str, limit: int, fix: str) -> Schema:
    """An experiment's results file through its schema (``shown``: how messages name it; ``fix``: what to do).

    Raises:
        SourceInvalid: the file is unsafe to read (a link, too large), not strict JSON, or does not fit the schema.
    """
    try:
        return schema.model_validate(read_json(path, limit))
    except UnsafeFileError as error:
        raise SourceInvalid(f"{shown}: <file>: {error.message} Fix: {error.fix}, or {fix}") from None
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<file>"
        raise SourceInvalid(f"{shown}: {field}: {first['msg']}. Fix: {fix}") from None


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
