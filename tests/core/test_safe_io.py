"""Durable, atomic writes (:mod:`sinkbench.safe_io`): a writer killed between write and rename leaves the old file
whole; every written file is flushed to disk before its rename and the rename is flushed after it; and the reads'
messages say where a file breaks."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from sinkbench import safe_io

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the killed writer is a forked child")


def _write_killed_before_rename(path: Path, text: str) -> int:
    """Run :func:`safe_io.write_text_atomic` in a child that is killed (SIGKILL) at its rename; the child's status."""
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.replace = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
        safe_io.write_text_atomic(path, text)
        os._exit(0)  # not reached
    _, status = os.waitpid(child, 0)
    return status


def test_a_writer_killed_between_write_and_rename_leaves_the_old_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    safe_io.write_json_atomic({"version": "old"}, target)
    status = _write_killed_before_rename(target, json.dumps({"version": "new"}))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert json.loads(target.read_text(encoding="utf-8")) == {"version": "old"}
    # The new text lies complete beside the target, never in it.
    (partial,) = tmp_path.glob(".report.json.*.partial")
    assert json.loads(partial.read_text(encoding="utf-8")) == {"version": "new"}
    safe_io.write_json_atomic({"version": "new"}, target)
    assert json.loads(target.read_text(encoding="utf-8")) == {"version": "new"}


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """Every ``fsync`` (with the path its descriptor names) and every rename, in order."""
    recorded: list[tuple[str, str]] = []
    fsync, replace, exchange = os.fsync, os.replace, safe_io.exchange
    sync_file_system = safe_io.sync_file_system

    def recording_fsync(descriptor: int) -> None:
        recorded.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        fsync(descriptor)

    def recording_replace(source: object, target: object) -> None:
        recorded.append(("rename", str(target)))
        replace(source, target)

    def recording_exchange(first: Path, second: Path) -> bool:
        recorded.append(("rename", str(second)))
        return exchange(first, second)

    def recording_sync_file_system(folder: Path) -> bool:
        recorded.append(("syncfs", str(folder)))
        return sync_file_system(folder)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name a descriptor's file")
    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)
    monkeypatch.setattr(safe_io, "exchange", recording_exchange)
    monkeypatch.setattr(safe_io, "sync_file_system", recording_sync_file_system)
    yield recorded


def test_a_file_is_flushed_before_its_rename_and_the_rename_after(
    tmp_path: Path, events: list[tuple[str, str]]
) -> None:
    target = tmp_path / "table.md"
    safe_io.write_text_atomic(target, "| a |\n")
    (flushed, partial), (renamed, onto), (flushed_again, folder) = events
    assert (flushed, renamed, flushed_again) == ("fsync", "rename", "fsync")
    assert Path(partial).name.startswith(".table.md.") and Path(partial).parent == tmp_path
    assert (onto, folder) == (str(target), str(tmp_path))
    assert target.read_text(encoding="utf-8") == "| a |\n"


def _staged_site(tmp_path: Path, earlier: bool) -> tuple[Path, Path]:
    """A staged folder of two pages, and its target (holding an older output when ``earlier``)."""
    target = tmp_path / "out"
    if earlier:
        target.mkdir()
        (target / "old.txt").write_text("old", encoding="utf-8")
    staged = tmp_path / ".out.staging-1"
    (staged / "pages").mkdir(parents=True)
    (staged / "index.html").write_text("<p>new</p>", encoding="utf-8")
    (staged / "pages" / "a.html").write_text("<p>a</p>", encoding="utf-8")
    return staged, target


@pytest.mark.parametrize("earlier", [False, True], ids=["new target", "replaced target"])
def test_a_folder_is_flushed_in_one_syncfs_before_it_is_installed_and_its_parent_after(
    tmp_path: Path, events: list[tuple[str, str]], earlier: bool
) -> None:
    if not safe_io.sync_file_system(tmp_path):
        pytest.skip("no syncfs here")
    staged, target = _staged_site(tmp_path, earlier)
    events.clear()
    safe_io.install_directory(staged, target, replace=earlier)
    rename = next(index for index, (kind, _) in enumerate(events) if kind == "rename")
    # One flush of the file system, no file-by-file fsync after it.
    assert events[:rename] == [("syncfs", str(staged))]
    assert ("fsync", str(tmp_path)) in events[rename + 1 :]
    assert sorted(p.name for p in target.iterdir()) == ["index.html", "pages"]


@pytest.mark.parametrize("earlier", [False, True], ids=["new target", "replaced target"])
def test_without_syncfs_every_file_and_folder_is_flushed_before_the_install_and_its_parent_after(
    tmp_path: Path, events: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch, earlier: bool
) -> None:
    monkeypatch.setattr(safe_io, "sync_file_system", lambda folder: False)
    staged, target = _staged_site(tmp_path, earlier)
    events.clear()
    safe_io.install_directory(staged, target, replace=earlier)
    rename = next(index for index, (kind, _) in enumerate(events) if kind == "rename")
    before = {path for kind, path in events[:rename] if kind == "fsync"}
    assert before == {
        str(staged / "index.html"),
        str(staged / "pages" / "a.html"),
        str(staged / "pages"),
        str(staged),
    }
    assert ("fsync", str(tmp_path)) in events[rename + 1 :]
    assert sorted(p.name for p in target.iterdir()) == ["index.html", "pages"]


def test_an_atomic_write_gets_the_permissions_open_would_give(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    safe_io.write_json_atomic({"s": 1.5}, target)
    assert target.stat().st_mode & 0o777 == safe_io.created_mode(0o666)


def test_a_truncated_json_file_names_the_line_and_column_once(tmp_path: Path) -> None:
    broken = tmp_path / "metadata.json"
    broken.write_text('{\n  "schema_version": 1,\n  "notes": "cut off', encoding="utf-8")
    with pytest.raises(safe_io.UnsafeFileError) as raised:
        safe_io.read_json(broken, 1000)
    assert raised.value.message == "is not valid JSON: Unterminated string starting at line 3, column 12."
    lines = tmp_path / "samples.jsonl"
    lines.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(safe_io.UnsafeFileError) as raised:
        list(safe_io.read_jsonl(lines, 1000))
    assert raised.value.message == "line 2 is not valid JSON: Expecting value at column 8."


def test_links_are_refused_unless_followed(tmp_path: Path) -> None:
    (tmp_path / "data.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "data.jsonl")
    with pytest.raises(safe_io.UnsafeFileError, match="is a symbolic link"):
        list(safe_io.read_jsonl(tmp_path / "link.jsonl", 1000))
    assert list(safe_io.read_jsonl(tmp_path / "link.jsonl", 1000, follow_links=True)) == [(1, {"a": 1})]
