"""An experiment's page command and page folder: ``--help`` writes nothing; the folder is replaced as a whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.page_fragment import committed_fragment, page_command, write_fragment


def _never() -> dict[str, str]:
    raise AssertionError("the page was rendered")


def _old_page(folder: Path) -> None:
    write_fragment(folder, {"old.md": "old page", "plots/old.svg": "<svg/>"})


def test_help_prints_the_command_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _old_page(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        page_command("demo", tmp_path, _never, ["--help"])
    assert stopped.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith("usage: python -m experiments.demo.page [-h]")
    assert "Render the demo experiment's site page from its committed results" in shown
    assert committed_fragment(tmp_path) == {"old.md": "old page", "plots/old.svg": "<svg/>"}


def test_an_unknown_option_is_a_usage_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _old_page(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        page_command("demo", tmp_path, _never, ["--out", "elsewhere"])
    assert stopped.value.code == 2
    assert "error: unknown option --out" in capsys.readouterr().err
    assert set(committed_fragment(tmp_path)) == {"old.md", "plots/old.svg"}


def test_the_command_replaces_the_page_folder_as_a_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _old_page(tmp_path)
    page_command("demo", tmp_path, lambda: {"page.md": "new", "plots/a.svg": "<svg>a</svg>"}, [])
    assert committed_fragment(tmp_path) == {"page.md": "new", "plots/a.svg": "<svg>a</svg>"}
    assert capsys.readouterr().out.startswith("wrote ")
    assert [path.name for path in tmp_path.iterdir()] == ["page"]  # no staging folder left beside it


def test_a_failed_write_leaves_the_old_page_folder_as_it_was(tmp_path: Path) -> None:
    _old_page(tmp_path)
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be written as UTF-8
        write_fragment(tmp_path, {"page.md": "new", "plots/bad.svg": "\ud800"})
    assert committed_fragment(tmp_path) == {"old.md": "old page", "plots/old.svg": "<svg/>"}
    assert [path.name for path in tmp_path.iterdir()] == ["page"]


def test_a_write_removes_what_a_killed_write_left_beside_the_page_folder(tmp_path: Path) -> None:
    _old_page(tmp_path)
    (tmp_path / ".page.staging-killed" / "plots").mkdir(parents=True)  # as a write killed midway leaves it
    (tmp_path / ".page.staging-killed" / "page.md").write_text("half", encoding="utf-8")
    (tmp_path / ".pages.staging-other").mkdir()  # another folder's: not this page's to remove
    write_fragment(tmp_path, {"page.md": "new"})
    assert committed_fragment(tmp_path) == {"page.md": "new"}
    assert sorted(path.name for path in tmp_path.iterdir()) == [".pages.staging-other", "page"]


def test_a_page_another_run_is_writing_is_refused_in_one_line(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    _old_page(tmp_path)
    with open(tmp_path / ".page.lock", "a") as held:  # another run's lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SystemExit) as stopped:
            page_command("demo", tmp_path, lambda: {"page.md": "new"}, [])
    assert str(stopped.value).startswith(f"demo page: {tmp_path / 'page'} is being written by another run")
    assert committed_fragment(tmp_path) == {"old.md": "old page", "plots/old.svg": "<svg/>"}


def test_a_page_folder_is_written_where_no_folder_was(tmp_path: Path) -> None:
    write_fragment(tmp_path / "new" / "experiment", {"page.md": "new"})
    assert committed_fragment(tmp_path / "new" / "experiment") == {"page.md": "new"}
    assert [path.name for path in (tmp_path / "new" / "experiment").iterdir()] == ["page"]


def test_a_file_where_the_experiment_folder_should_be_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "experiment").write_text("not a folder", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        page_command("demo", tmp_path / "experiment", lambda: {"page.md": "new"}, [])
    assert (
        str(stopped.value)
        == f"demo page: cannot write page: {tmp_path / 'experiment'} is a file, not a folder"
    )
    assert (tmp_path / "experiment").read_text(encoding="utf-8") == "not a folder"


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_file_or_link_where_the_page_folder_goes_is_refused_and_kept(tmp_path: Path, kind: str) -> None:
    (tmp_path / "notes.txt").write_text("a user's notes", encoding="utf-8")
    if kind == "file":
        (tmp_path / "page").write_text("a user's page", encoding="utf-8")
    else:
        (tmp_path / "page").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(SystemExit) as stopped:
        page_command("demo", tmp_path, lambda: {"page.md": "new"}, [])
    assert (
        str(stopped.value)
        == "demo page: page is not a folder Fix: move it away; the page folder is written there"
    )
    assert (tmp_path / "page").read_text(encoding="utf-8") == (
        "a user's page" if kind == "file" else "a user's notes"
    )
    assert (tmp_path / "page").is_symlink() == (kind == "link")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt", "page"]
