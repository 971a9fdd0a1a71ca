"""The experiments' pages, published as they are: every file under ``<experiments>/<name>/page/`` (Markdown made
with the site's templates, and the files it links to) goes into the site at the same relative path, and its Markdown
passes through the build like any page. sinkbench never imports the experiments nor reads their results. A page the
site expects from them (``experiment_pages``) that no folder provides says so, so a build outside a clone still has
every page of its navigation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sinkbench.errors import UserError
from sinkbench.leaderboard.consistency import Fact, FactBook, basis_signature, fact_key, model_ref
from sinkbench.leaderboard.content import BackboneView, OtherScore, OwnScore, Shown
from sinkbench.safe_io import read_text

#: The folder of an experiment holding its page.
PAGE_FOLDER = "page"
#: An expected page that no experiment provides.
NO_RESULTS = """# {title}

!!! note "No results"
    This build found no experiment page `{path}` in {where}. The repository's `experiments/` folder holds
    them: build the site from a clone (`sinkbench site build`, or `--experiments DIR`).
"""


@dataclass(frozen=True)
class ExperimentPages:
    """What the experiments publish: Markdown pages by site path, and every other file as ``(site path, source)``."""

    pages: dict[str, str]
    files: list[tuple[str, Path]]


def experiment_pages(folder: Path | None, expected: Sequence[str] = ()) -> ExperimentPages:
    """Every file under ``folder/*/page/`` (None: none), and a short note for each ``expected`` page none gives.

    Raises:
        UserError: a file there is a link, a page is not UTF-8, or two experiments publish the same path.
    """
    pages: dict[str, str] = {}
    files: dict[str, Path] = {}
    for page_dir in sorted(folder.glob(f"*/{PAGE_FOLDER}")) if folder else []:
        for source in sorted(page_dir.rglob("*")):
            path = source.relative_to(page_dir).as_posix()
            if source.is_symlink():
                raise UserError(
                    f"{source}: a link; an experiment's page folder holds plain files only. Fix: copy it"
                )
            if not source.is_file():
                continue
            if path in pages or path in files:
                raise UserError(f"{source}: {path} is published by two experiments. Fix: rename one of them")
            if source.suffix == ".md":
                pages[path] = read_text(source)
            else:
                files[path] = source
    where = f"`{folder.as_posix()}`" if folder else "this build (no experiments folder given)"
    for path in expected:
        title = Path(path).stem.replace("_", " ").capitalize()
        pages.setdefault(path, NO_RESULTS.format(title=title, path=path, where=where))
    return ExperimentPages(pages, list(files.items()))


def quote_scores(backbones: Sequence[BackboneView], pages: dict[str, str]) -> None:
    """Add to each backbone's own scores (its page's "Elsewhere on this board") every score of the same model and
    task that an experiment page marks on another basis or as another number, once per basis, so that the page
    names every basis the board shows the score on (:class:`~sinkbench.leaderboard.consistency.FactBook`)."""
    book = FactBook()
    for path, text in sorted(pages.items()):
        book.read_page(path, text)
    quoted: dict[str, list[Fact]] = {}
    for fact in book.facts:
        if fact.key.startswith("score|") and fact.number is not None and fact.value:
            quoted.setdefault(fact.key, []).append(fact)
    for backbone in backbones:
        ref = model_ref(backbone.model.model_id, backbone.model.revision)
        backbone.scores = [
            replace(
                own,
                elsewhere=own.elsewhere
                + _quotes(quoted.get(fact_key("score", ref, own.task), []), pages, own),
            )
            for own in backbone.scores
        ]


def _quotes(facts: list[Fact], pages: dict[str, str], own: OwnScore) -> tuple[OtherScore, ...]:
    """One :class:`OtherScore` per basis among ``facts`` (each with a number and its value; the first page that
    shows it) that ``own`` does not name yet."""
    named = {basis_signature(basis) for basis in [own.basis, *(other.basis for other in own.elsewhere)]}
    found: dict[frozenset[str], OtherScore] = {}
    for fact in facts:
        signature = basis_signature(fact.basis)
        if signature in named or signature in found:
            continue
        title = re.search(r"^title: (.+)$", pages[fact.page], re.MULTILINE)
        label = title.group(1).strip() if title else Path(fact.page).stem
        shown = Shown(fact.value[0], fact.number[1])
        page = Path(fact.page).with_suffix(".html").as_posix()
        found[signature] = OtherScore("", label, shown, fact.basis, page=page)
    return tuple(found.values())
