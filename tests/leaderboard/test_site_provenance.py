"""The board's own provenance (sinkbench.leaderboard.history, the Changelog page, citations) and what the site loads:
the chart script vendored with its licence and loaded only where a chart is, relative links on every page, the 404 too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import tomllib
import yaml

from sinkbench import charts
from sinkbench.leaderboard.history import board_history, parse_log
from sinkbench.leaderboard.project import build_site

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"


def _git(folder: Path, *arguments: str, date: str | None = None) -> None:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    environment |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    if date:
        environment |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(
        ["git", *arguments], cwd=folder, env=environment, check=True, capture_output=True, timeout=60
    )


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository whose submissions/ gained a reported pair on 2026-10-01, then the fixtures' measured
    backbone on 2026-11-15 while the pair changed, with a commit touching only the README between."""
    repo = tmp_path_factory.mktemp("history")
    _git(repo, "init", "-q")
    submissions = repo / "submissions"
    shutil.copytree(FIXTURES / "pairs" / "tiny-vlm-reported", submissions / "pairs" / "tiny-vlm-reported")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Add the reported pair", date="2026-10-01T12:00:00Z")
    (submissions / "README.md").write_text("notes\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Only a README", date="2026-10-02T12:00:00Z")
    shutil.copytree(FIXTURES / "backbones" / "tiny-llm", submissions / "backbones" / "tiny-llm")
    metadata = submissions / "pairs" / "tiny-vlm-reported" / "metadata.json"
    metadata.write_text(
        metadata.read_text(encoding="utf-8").replace("tests", "tests (edited)"), encoding="utf-8"
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Add a backbone, fix the pair", date="2026-11-15T12:00:00Z")
    return repo


def test_history_gives_each_entry_its_first_date_and_a_changelog(history_repo: Path) -> None:
    history = board_history(history_repo / "submissions")
    assert history.available and not history.uncommitted
    assert history.submitted == {"tiny-vlm-reported": "2026-10-01", "tiny-llm": "2026-11-15"}
    newest, oldest = history.changes  # the README-only commit touches no entry
    assert (newest.date, newest.subject, newest.added, newest.changed) == (
        "2026-11-15",
        "Add a backbone, fix the pair",
        ("backbones/tiny-llm",),
        ("pairs/tiny-vlm-reported",),
    )
    assert oldest.added == ("pairs/tiny-vlm-reported",) and not oldest.changed
    assert history.version == f"2026-11-15 ({newest.commit})"


def test_outside_git_there_is_no_history_and_no_date_is_guessed(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path / "submissions")
    history = board_history(tmp_path / "submissions")
    assert not history.available and history.submitted == {} and history.version is None


def test_a_long_subject_is_shortened_and_a_removal_is_listed() -> None:
    text = "\x00abc1234\t2026-12-01\t" + "x" * 300 + "\n\nD\tpairs/gone/metadata.json\nM\tREADME.md\n"
    (change,) = parse_log(text)
    assert change.removed == ("pairs/gone",) and len(change.subject) == 160 and change.subject.endswith("…")


def test_the_built_site_shows_the_changelog_and_submission_dates(history_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(history_repo / "submissions", out)
    changelog = (out / "changelog.html").read_text(encoding="utf-8")
    assert "Board version 2026-11-15" in changelog and "Add a backbone, fix the pair" in changelog
    assert 'href="pairs/tiny-vlm-reported.html"' in changelog and "Only a README" not in changelog
    pair = (out / "pairs" / "tiny-vlm-reported.html").read_text(encoding="utf-8")
    assert "<dt>Submitted</dt><dd>2026-10-01</dd>" in pair
    leaderboard = (out / "leaderboard.html").read_text(encoding="utf-8")
    assert 'data-sort="2026-10-01">2026-10-01</td>' in leaderboard
    assert "board version 2026-11-15" in (out / "index.html").read_text(encoding="utf-8")


def test_citation_cff_matches_the_package_and_the_home_page(tmp_path: Path) -> None:
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["version"] == project["version"] and citation["license"] == project["license"]["text"]
    paper = citation["preferred-citation"]
    assert {"value": "arXiv:2609.00746", "type": "other"} in paper["identifiers"]
    out = tmp_path / "site"
    build_site(FIXTURES, out)
    home = re.sub(r"<[^>]+>", "", (out / "index.html").read_text(encoding="utf-8"))  # the code is highlighted
    assert "eprint    = {2609.00746}" in home and f"version = {{{project['version']}}}" in home
    assert paper["title"] in home and "CITATION.cff" in home


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("loads") / "site"
    build_site(FIXTURES, out)
    return out


def test_the_chart_script_is_vendored_with_its_licence_and_loaded_only_where_a_chart_is(
    fixture_site: Path,
) -> None:
    script, notice = charts.script_bundle(), charts.licence_notice()
    vendored = (fixture_site / charts.SCRIPT).read_text(encoding="utf-8")
    assert vendored == script and "window.vegaEmbed" in vendored
    licence = (fixture_site / charts.LICENCE).read_text(encoding="utf-8")
    assert licence == notice and licence.count("Redistribution and use in source and binary forms") == 2
    assert "University of Washington Interactive Data Lab" in licence and "Jon Mease" in licence
    assert f"Vega-Lite {charts.VEGA_LITE}" in licence
    for page in fixture_site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        depth = len(page.relative_to(fixture_site).parts) - 1
        script = charts.SCRIPT
        tag = f'<script src="{"../" * depth}{script}" defer></script>'
        assert (tag in html) == ("data-sb-chart" in html), page
        assert html.count(script) <= 1, page


def test_every_page_links_relatively_the_404_page_too(fixture_site: Path) -> None:
    for page in fixture_site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        rooted = re.findall(r'(?:href|src)="(/[^/"][^"]*)"', html)
        assert rooted == [], (page.name, rooted[:3])
    page = (fixture_site / "404.html").read_text(encoding="utf-8")
    assert 'href="./assets/sinkbench.css"' in page and 'href="./leaderboard.html"' in page


def test_charts_embed_figures_that_no_label_can_break_out_of() -> None:
    text = charts.spec_json({"data": [{"name": "</script><b>x</b> & y"}]})
    assert "<" not in text and ">" not in text and "&" not in text
    assert "\\u003c/script\\u003e" in text
