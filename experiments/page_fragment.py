"""An experiment's page on the site, rendered by the experiment itself into its ``page/`` folder: Markdown from its
template with the site's macros (``site/templates/_macros.j2``) and its charts as SVG files. The site publishes that
folder as it is (:mod:`sinkbench.leaderboard.experiment_pages`); sinkbench never imports the experiments. Pages read
their results files through their schema here, a bad file being one line naming the file, the field and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import jinja2
from pydantic import BaseModel, ValidationError

from sinkbench.cli.parser import CommandParser
from sinkbench.errors import SinkbenchError, UserError, os_reason
from sinkbench.leaderboard.content import PlotRef
from sinkbench.leaderboard.experiment_pages import PAGE_FOLDER
from sinkbench.leaderboard.pages import make_environment
from sinkbench.leaderboard.sources import SiteSources
from sinkbench.publish import exclusive
from sinkbench.safe_io import UnsafeFileError, building, created_mode, read_json, staging_prefix

Schema = TypeVar("Schema", bound=BaseModel)
#: The repository's root, against which the pages name the files they were made from.
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ResultsFile(Generic[Schema]):
    """One results file as a page reads it: the name the page shows and its validated contents."""

    source: str
    data: Schema


class SourceInvalid(UserError):
    """An experiment's results file cannot be used; the message is one line naming the file, the field and the
    fix."""


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


def shown_path(path: Path) -> str:
    """``path`` as a page names it: relative to the repository when inside it (no machine's path is published)."""
    resolved = path.resolve()
    return resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else path.name


def render(folder: Path, template: str, context: dict[str, object]) -> str:
    """``folder/template`` rendered with the site's environment and macros."""
    environment = make_environment(SiteSources().templates)
    environment.loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(folder), environment.loader])
    return environment.get_template(template).render(**context)


def fragment(page: str, markdown: str, plots: Sequence[PlotRef]) -> dict[str, str]:
    """The files of a page folder by their path in it (= in the site): the page and its charts drawn."""
    return {page: markdown, **{plot.path: plot.chart.svg() for plot in plots}}


def write_fragment(folder: Path, files: dict[str, str]) -> Path:
    """Replace ``folder``'s page folder with ``files`` as a whole (written beside it, then swapped in: a failed
    write leaves the old folder as it was; one run at a time, which removes what killed runs left beside it);
    returns the page folder. A file or link where the page folder goes is refused (UserError), not replaced."""
    target = folder / PAGE_FOLDER
    if target.is_symlink() or (target.exists() and not target.is_dir()):  # a user's file, not the page folder
        raise UserError(
            f"{shown_path(target)} is not a folder", "move it away; the page folder is written there"
        )
    folder.mkdir(parents=True, exist_ok=True)  # where the lock goes
    with exclusive(target), building(target, staging_prefix(target), replace=True) as staging:
        staging.chmod(created_mode(0o777))  # as mkdir makes a folder, not the staging folder's 0o700
        for path, text in files.items():
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            (staging / path).write_text(text, encoding="utf-8")
    return target


def committed_fragment(folder: Path) -> dict[str, str]:
    """The files of ``folder``'s page folder as they are on disk, by their path in it."""
    target = folder / PAGE_FOLDER
    return {
        path.relative_to(target).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(target.rglob("*"))
        if path.is_file()
    }


def page_command(
    name: str, folder: Path, page_files: Callable[[], dict[str, str]], argv: Sequence[str] | None = None
) -> None:
    """``python -m experiments.<name>.page``: render the experiment's page into ``folder/page/``; a bad results
    file ends the command with its one-line message, which starts with ``name``. It takes no options but
    ``--help`` (``argv``: the command line's arguments, by default ``sys.argv``'s)."""
    CommandParser(
        prog=f"python -m experiments.{name}.page",
        description=f"Render the {name} experiment's site page from its committed results into "
        f"{shown_path(folder / PAGE_FOLDER)}/, replacing that folder as a whole.",
    ).parse_args(argv)
    try:
        target = write_fragment(folder, page_files())
    except SinkbenchError as error:  # a bad results file, or another run writing the page
        raise SystemExit(f"{name} page: {error}") from None
    except OSError as error:  # e.g. a file where the experiment's folder should be
        raise SystemExit(
            f"{name} page: cannot write {shown_path(folder / PAGE_FOLDER)}: {os_reason(error)}"
        ) from None
    print(f"wrote {shown_path(target)}")
