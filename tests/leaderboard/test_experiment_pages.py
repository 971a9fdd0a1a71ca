"""The experiments' pages on the site (sinkbench.leaderboard.experiment_pages): every file of each
``<experiments>/*/page/`` folder published at its path there, and a note for an expected page none gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinkbench.errors import UserError
from sinkbench.leaderboard.experiment_pages import experiment_pages
from sinkbench.leaderboard.project import build_site

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"


def _page(folder: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (folder / "page" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "page" / path).write_text(text, encoding="utf-8")


def test_each_experiments_page_folder_is_published_as_it_is(tmp_path: Path) -> None:
    _page(tmp_path / "one", {"one.md": "# One\n", "plots/one.svg": "<svg/>"})
    _page(tmp_path / "two", {"two.md": "# Two\n"})
    (tmp_path / "notes").mkdir()  # a folder without a page publishes nothing
    found = experiment_pages(tmp_path, ["one.md", "three.md"])
    assert found.files == [("plots/one.svg", tmp_path / "one" / "page" / "plots" / "one.svg")]
    assert found.pages["one.md"] == "# One\n" and found.pages["two.md"] == "# Two\n"
    assert (
        found.pages["three.md"].startswith("# Three\n")
        and "found no experiment page `three.md`" in found.pages["three.md"]
    )
    assert experiment_pages(None, ["one.md"]).pages["one.md"].count("no experiments folder given") == 1


def test_a_link_or_a_path_published_twice_is_refused(tmp_path: Path) -> None:
    _page(tmp_path / "one", {"same.md": "# One\n"})
    _page(tmp_path / "two", {"same.md": "# Two\n"})
    with pytest.raises(UserError, match=r"same\.md is published by two experiments\. Fix: rename one"):
        experiment_pages(tmp_path)
    (tmp_path / "two" / "page" / "same.md").unlink()
    (tmp_path / "two" / "page" / "linked.md").symlink_to(tmp_path / "one" / "page" / "same.md")
    with pytest.raises(UserError, match=r"linked\.md: a link"):
        experiment_pages(tmp_path)


def test_a_page_that_is_not_utf8_is_one_line_naming_it(tmp_path: Path) -> None:
    _page(tmp_path / "one", {"one.md": "# One\n"})
    (tmp_path / "one" / "page" / "one.md").write_bytes(b"# One \xff\n")
    with pytest.raises(UserError) as refused:
        experiment_pages(tmp_path)
    assert (
        str(refused.value)
        == f"{tmp_path}/one/page/one.md: is not UTF-8 (byte 6). Fix: save the file as UTF-8"
    )


def test_the_site_publishes_the_pages_and_refuses_one_that_replaces_a_board_page(tmp_path: Path) -> None:
    experiments = tmp_path / "experiments"
    _page(experiments / "study", {"training.md": "# Study\n\nMeasured 1.5.\n", "plots/study.svg": "<svg/>"})
    build_site(FIXTURES, tmp_path / "site", experiments_dir=experiments)
    assert "Measured 1.5." in (tmp_path / "site" / "training.html").read_text(encoding="utf-8")
    assert (tmp_path / "site" / "plots" / "study.svg").read_text(encoding="utf-8") == "<svg/>"
    assert "found no experiment page" in (tmp_path / "site" / "interventions.html").read_text(
        encoding="utf-8"
    )
    _page(experiments / "study", {"leaderboard.md": "# Not the board\n"})
    with pytest.raises(UserError, match=r"an experiment's page leaderboard\.md is a page of the board"):
        build_site(FIXTURES, tmp_path / "other", experiments_dir=experiments)
    assert not (tmp_path / "other").exists()
