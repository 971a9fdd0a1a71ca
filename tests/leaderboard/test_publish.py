"""Fault injection on publication (issue 11, :mod:`sinkbench.publish`): ``aggregate`` and ``site build`` are killed
at each step of publishing their ``--out``, concurrent writers are kept out, and OS errors become one line.

Each run under test is the real command line in a child process (``os.fork``) whose filesystem-mutating calls
(``tempfile.mkdtemp``, ``Path.write_text``, MkDocs' ``write_file``, ``os.rename``, ``os.replace``,
:func:`sinkbench.safe_io.exchange`, ``shutil.rmtree``) are counted as its steps; at step N the child hard-exits (``os._exit(9)``: no ``finally``, no
clean-up, as a kill would leave it), or pauses until told to go on. After every kill, ``--out`` is either entirely
the old output or entirely the new one (file names and contents), and the next run leaves nothing beside it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import mkdocs.utils
import pytest

from sinkbench import publish, safe_io
from sinkbench.cli import build_parser, main
from sinkbench.leaderboard.project import build_site
from sinkbench.publish import MARKER
from sinkbench.tables.aggregate import aggregate_submissions

fcntl = pytest.importorskip("fcntl", reason="the lock is POSIX flock")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the runs under test are forked")
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
EPOCH = {"SOURCE_DATE_EPOCH": "1796000000"}
#: The calls that change the filesystem during a run: each call is one step.
STEP_CALLS = (
    (tempfile, "mkdtemp"),
    (Path, "write_text"),
    (mkdocs.utils, "write_file"),
    (os, "rename"),
    (os, "replace"),
    (safe_io, "exchange"),
    (shutil, "rmtree"),
)
KILLED = 9


def _count_steps(kill_at: int, pause_at: int, ready: Path | None, go: Path | None) -> list[list[str]]:
    """In the child: count every step; hard-exit before step ``kill_at``, wait for ``go`` at step ``pause_at``."""
    steps: list[list[str]] = []

    def counted(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def step(*args: object, **kwargs: object) -> object:
            first = (
                args[1]
                if name == "write_file"
                else args[0]
                if args and args[0] is not None
                else kwargs.get("prefix", "")
            )
            steps.append([name, os.fspath(first) if isinstance(first, (str, os.PathLike)) else str(first)])
            if len(steps) == kill_at:
                os._exit(KILLED)
            if len(steps) == pause_at and ready is not None and go is not None:
                os.close(os.open(ready, os.O_CREAT | os.O_WRONLY))
                while not os.path.exists(go):
                    time.sleep(0.02)
            return original(*args, **kwargs)

        setattr(owner, name, step)

    for owner, name in STEP_CALLS:
        counted(owner, name)
    return steps


def start_child(
    argv: list[str],
    *,
    kill_at: int = 0,
    pause_at: int = 0,
    trace: Path | None = None,
    ready: Path | None = None,
    go: Path | None = None,
) -> int:
    """Fork a child that runs ``sinkbench ARGV`` with counted steps (and writes them to ``trace``); return its pid
    (the child itself never returns: it exits with the command's status, or 9 when killed)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 99
    try:
        steps = _count_steps(kill_at, pause_at, ready, go)
        os.environ.update(EPOCH)
        code = main(argv)
        if trace is not None:
            with open(trace, "w", encoding="utf-8") as stream:
                json.dump(steps, stream)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def wait_child(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def run_child(argv: list[str], **options: object) -> int:
    """Run ``sinkbench ARGV`` in a child process (see :func:`start_child`); return its exit status."""
    return wait_child(start_child(argv, **options))


def snapshot(folder: Path) -> dict[str, str] | None:
    """File path -> sha256 of every file under ``folder``; None when it does not exist."""
    if not folder.exists():
        return None
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def leftovers(out: Path) -> list[str]:
    """What a run left beside ``out``: anything but ``out`` itself and its lock file."""
    return sorted(
        path.name for path in out.parent.iterdir() if path.name not in {out.name, f".{out.name}.lock"}
    )


class Command:
    """A command under test: how to build its output in this process (the references), and its command line."""

    def __init__(
        self, name: str, build: Callable[[Path, Path], object], argv: Callable[[Path, Path], list[str]]
    ):
        self.name, self.build, self.argv = name, build, argv


def _build_site(submissions: Path, out: Path) -> object:
    with mock.patch.dict(os.environ, EPOCH):
        return build_site(submissions, out)


AGGREGATE = Command(
    "aggregate",
    lambda submissions, out: aggregate_submissions(submissions, out),
    lambda submissions, out: ["aggregate", "--submissions", str(submissions), "--out", str(out)],
)
SITE = Command(
    "site build",
    _build_site,
    lambda submissions, out: ["site", "build", "--submissions", str(submissions), "--out", str(out)],
)


class References(dict):
    """The two submissions trees (``old``: the fixtures; ``new``: without the reported backbone) and, built on
    first use in this process, each command's output of each (``"aggregate/old"``, ...)."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.base = base
        old, new = base / "old" / "submissions", base / "new" / "submissions"
        shutil.copytree(FIXTURES, old)
        shutil.copytree(FIXTURES, new)
        shutil.rmtree(new / "backbones" / "tiny-llm-reported")
        self.update(old=old, new=new)

    def __missing__(self, key: str) -> Path:
        name, version = key.split("/")
        command = next(command for command in (AGGREGATE, SITE) if command.name == name)
        out = self.base / f"{name}-{version}"
        command.build(self[version], out)
        self[key] = out
        return out


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> References:
    build_parser()  # import every command module here once, not in each child
    return References(tmp_path_factory.mktemp("references"))


def _kill_points(steps: list[list[str]], out: Path, *, every: bool) -> list[int]:
    """1-based steps to kill at: all of them, or every step of the publication itself (folders made, the marker
    written, renames, the swap, deletions) and the first and last file written by the build in between."""
    assert any(f".{out.name}.staging-" in path for _, path in steps), steps
    if every:
        return list(range(1, len(steps) + 1))
    writes = ("write_text", "write_file")
    written = [i for i, (kind, path) in enumerate(steps, 1) if kind in writes and not path.endswith(MARKER)]
    points = {i for i, (kind, path) in enumerate(steps, 1) if kind not in writes or path.endswith(MARKER)}
    return sorted(points | {written[0], written[-1]})


@pytest.mark.slow  # forks a run per kill point, each building the site or the tables again
@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
@pytest.mark.parametrize("earlier", ["old output", "no output"])
def test_a_killed_run_leaves_the_old_or_the_new_output_and_the_next_run_cleans_up(
    command: Command, earlier: str, references: References, tmp_path: Path
) -> None:
    old_ref = snapshot(references[f"{command.name}/old"]) if earlier == "old output" else None
    new_ref = snapshot(references[f"{command.name}/new"])
    submissions = references["new"]

    def fresh(name: str) -> Path:
        out = tmp_path / name / "out"
        out.parent.mkdir()
        if old_ref is not None:
            shutil.copytree(references[f"{command.name}/old"], out)
        return out

    out = fresh("trace")
    assert run_child(command.argv(submissions, out), trace=tmp_path / "trace.json") == 0
    assert snapshot(out) == new_ref and leftovers(out) == []
    steps = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    points = _kill_points(steps, out, every=command is AGGREGATE)
    assert len(points) >= 6
    for point in points:
        out = fresh(f"kill-{point}")
        assert run_child(command.argv(submissions, out), kill_at=point) == KILLED, steps[point - 1]
        assert snapshot(out) in (old_ref, new_ref), f"mixed output after a kill at {steps[point - 1]}"
        if (
            old_ref is not None or point == points[-1]
        ):  # the next run (the site's costs a second: not every time)
            command.build(submissions, out)
            assert snapshot(out) == new_ref and leftovers(out) == [], f"after a kill at {steps[point - 1]}"


@pytest.mark.parametrize(
    "command",
    [AGGREGATE, pytest.param(SITE, marks=pytest.mark.slow)],  # a forked whole site build: the slow tier
    ids=lambda command: command.name,
)
def test_a_second_writer_gets_the_lock_error_while_the_first_is_publishing(
    command: Command, references: References, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two processes: the first pauses inside publication (its staging folder made); the second is refused at
    once, in one line, and the first then publishes."""
    out = tmp_path / "published" / "out"
    shutil.copytree(references[f"{command.name}/old"], out)
    ready, go = tmp_path / "ready", tmp_path / "go"
    argv = command.argv(references["new"], out)
    first = start_child(argv, pause_at=2, ready=ready, go=go)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert time.monotonic() < deadline, "the first run never reached its staging folder"
            time.sleep(0.02)
        capsys.readouterr()
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and "Traceback" not in captured.err + captured.out
        assert f"sinkbench {command.name}: {out} is being written by another run" in captured.err
        assert snapshot(out) == snapshot(references[f"{command.name}/old"])
    finally:
        go.touch()
        status = wait_child(first)
    assert status == 0
    assert snapshot(out) == snapshot(references[f"{command.name}/new"]) and leftovers(out) == []


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
def test_a_held_lock_refuses_the_command_in_one_line(
    command: Command, references: References, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(references[f"{command.name}/old"], out)
    before = snapshot(out)
    with (tmp_path / ".out.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        capsys.readouterr()
        assert main(command.argv(references["new"], out)) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err + captured.out
    assert captured.err.startswith(f"sinkbench {command.name}: {out} is being written by another run;")
    assert snapshot(out) == before and leftovers(out) == []


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
def test_no_lock_file_is_left_beside_out(command: Command, references: References, tmp_path: Path) -> None:
    """The lock file goes when the run ends, whether it published or failed (a clone stays clean)."""
    out = tmp_path / "out"
    assert main(command.argv(references["new"], out)) == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]
    (out / MARKER).unlink()  # no longer a sinkbench output: refused
    (out / "mine.txt").write_text("a user's file\n", encoding="utf-8")
    assert main(command.argv(references["new"], out)) == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]


def test_a_lock_file_removed_by_the_run_that_held_it_is_not_a_lock(tmp_path: Path) -> None:
    """A run that opened the lock file just before the run holding it removed it would lock a file no longer
    there; it must lock the file at the path instead, or a third run could lock that one too."""
    out = tmp_path / "out"
    lock_path = tmp_path / ".out.lock"
    flock, removed = fcntl.flock, []

    def holder_finishes_first(handle: object, operation: int) -> None:
        if not removed:  # between our open and our flock, the holder removes the file and lets go
            lock_path.unlink()
            removed.append(True)
        flock(handle, operation)

    with mock.patch.object(publish.fcntl, "flock", holder_finishes_first), publish.exclusive(out):
        assert removed and lock_path.exists()
        with lock_path.open("a") as third, pytest.raises(BlockingIOError):
            flock(third, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert not lock_path.exists()


def _fail(monkeypatch: pytest.MonkeyPatch, what: str, code: int, inside: Path) -> None:
    """Make the operating system refuse, with ``code``, every file write (``what="write"``: a full disk) or every
    new folder (``what="folder"``: a read-only folder) under ``inside``."""
    import tempfile

    write_text, mkdtemp = Path.write_text, tempfile.mkdtemp

    def failing_write(self: Path, *args: object, **kwargs: object) -> int:
        if what == "write" and inside in self.parents:
            raise OSError(code, os.strerror(code), str(self))
        return write_text(self, *args, **kwargs)

    def failing_mkdtemp(suffix: str | None = None, prefix: str | None = None, dir: str | None = None) -> str:
        if what == "folder" and dir is not None and (Path(dir) == inside or inside in Path(dir).parents):
            raise OSError(code, os.strerror(code), os.path.join(dir, f"{prefix or ''}x"))
        return mkdtemp(suffix, prefix, dir)

    monkeypatch.setattr(Path, "write_text", failing_write)
    monkeypatch.setattr(tempfile, "mkdtemp", failing_mkdtemp)


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
@pytest.mark.parametrize(
    ("what", "code"), [("write", errno.ENOSPC), ("folder", errno.EROFS), ("folder", errno.EACCES)]
)
def test_an_os_error_while_publishing_is_one_line_and_changes_nothing(
    command: Command,
    what: str,
    code: int,
    references: References,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "site" / "out"
    shutil.copytree(references[f"{command.name}/old"], out)
    before = snapshot(out)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH["SOURCE_DATE_EPOCH"])
    _fail(monkeypatch, what, code, tmp_path / "site")
    capsys.readouterr()
    assert main(command.argv(references["new"], out)) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err + captured.out, captured
    assert lines[0].startswith(f"sinkbench {command.name}: cannot write {out}: {os.strerror(code)}"), lines
    assert snapshot(out) == before and leftovers(out) == []


#: The account a root test run drops to, so that file permissions apply to the command under test.
NOBODY = 65534


def _closed_to_others(path: Path) -> Path | None:
    """The first folder above ``path`` (or ``path`` itself) that a user who is neither its owner nor in its group
    cannot enter or read (a checkout under ``mktemp -d`` or a private home), or None."""
    for folder in [*reversed(path.resolve().parents), path.resolve()]:
        mode = folder.stat().st_mode
        if not mode & 0o001 or (folder == path.resolve() and not mode & 0o004):
            return folder
    return None


def _run_as_a_user(argv: list[str], folder: Path) -> tuple[int, str]:
    """Run ``sinkbench ARGV`` where file permissions apply: here, or (as root, who ignores them) in a forked child
    that becomes ``nobody``. Returns its exit status and what it printed to stderr."""
    errors = folder / "stderr.txt"
    if os.geteuid() != 0:
        with open(errors, "w", encoding="utf-8") as stream, mock.patch.object(sys, "stderr", stream):
            status = main(argv)
        return status, errors.read_text(encoding="utf-8")
    closed = _closed_to_others(FIXTURES)
    if closed is not None:
        pytest.skip(f"{closed} is closed to other users (mode {closed.stat().st_mode & 0o777:o}), so `nobody` "
                    "cannot read the fixtures; run the suite from a checkout that others can read")  # fmt: skip
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            sys.stderr = open(errors, "w", encoding="utf-8")  # noqa: SIM115 (flushed before the child exits)
            code = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    return wait_child(pid), errors.read_text(encoding="utf-8")


def _outside_pytest_tmp(prefix: str, request: pytest.FixtureRequest) -> Path:
    """A new folder in the system's temporary folder (pytest's is root-only, so another user could not write in
    it), removed after the test whether it passes or not."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    return base


@pytest.mark.parametrize(
    ("command", "read_only"),
    [(AGGREGATE, "out"), (SITE, "out"), (SITE, "a folder inside it")],
    ids=["aggregate", "site build", "site build, inside"],
)
def test_a_read_only_out_is_refused_in_one_line_and_nothing_is_left_beside_it(
    command: Command, read_only: str, references: References, request: pytest.FixtureRequest
) -> None:
    """Its old contents could be swapped out but not deleted: the run is refused before building anything."""
    base = _outside_pytest_tmp("sinkbench-read-only-", request)
    out = base / "out"
    shutil.copytree(references[f"{command.name}/old"], out)
    locked = out if read_only == "out" else out / "pairs"
    if os.geteuid() == 0:  # the user's own output
        for path in [base, *base.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
    before = snapshot(out)
    locked.chmod(0o555)
    try:
        status, errors = _run_as_a_user(command.argv(FIXTURES, out), base)
    finally:
        locked.chmod(0o755)
    assert status == 1 and "Traceback" not in errors, errors
    assert errors.count("\n") == 1, errors
    assert errors.startswith(f"sinkbench {command.name}: cannot replace {out}: {locked} is read-only"), errors
    assert snapshot(out) == before
    assert sorted(path.name for path in base.iterdir()) == ["out", "stderr.txt"]


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
def test_a_read_only_parent_folder_is_one_line(
    command: Command, references: References, request: pytest.FixtureRequest
) -> None:
    base = _outside_pytest_tmp("sinkbench-read-only-parent-", request)
    parent = base / "read-only"
    shutil.copytree(references[f"{command.name}/old"], parent / "out")
    before = snapshot(parent / "out")
    base.chmod(0o777)  # for stderr.txt, whoever runs the command
    parent.chmod(0o555)
    try:
        status, errors = _run_as_a_user(command.argv(FIXTURES, parent / "out"), base)
    finally:
        parent.chmod(0o755)
    assert status == 1 and errors.count("\n") == 1, errors
    assert "Permission denied" in errors and str(parent) in errors, errors
    assert snapshot(parent / "out") == before


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
@pytest.mark.parametrize("kind", ["someone's folder", "a file", "a link to an output"])
def test_an_out_that_sinkbench_did_not_write_is_refused_and_kept(
    command: Command,
    kind: str,
    references: References,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out"
    if kind == "someone's folder":
        out.mkdir()
        (out / "thesis.tex").write_text("keep me", encoding="utf-8")
    elif kind == "a file":
        out.write_text("keep me", encoding="utf-8")
    else:
        os.symlink(references[f"{command.name}/old"], out)
    before = (snapshot(out) if out.is_dir() else None, out.read_bytes() if out.is_file() else None)
    capsys.readouterr()
    assert main(command.argv(references["new"], out)) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and str(out) in captured.err and "Traceback" not in captured.err
    assert (snapshot(out) if out.is_dir() else None, out.read_bytes() if out.is_file() else None) == before
    assert os.path.islink(out) == (kind == "a link to an output")


def test_an_output_of_another_kind_is_refused_and_kept(
    references: References, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped --out naming another command's output is not replaced: the tables never replace a site, a site
    never replaces the tables, and neither replaces an intervention's checkpoints."""
    site, tables, checkpoints = tmp_path / "site", tmp_path / "tables", tmp_path / "checkpoints"
    shutil.copytree(references["site build/new"], site)
    shutil.copytree(references["aggregate/new"], tables)
    with publish.publishing(checkpoints, "checkpoints") as staging:
        (staging / "intervention.json").write_text("{}\n", encoding="utf-8")
    for command, out, kind, held in (
        (AGGREGATE, site, "tables", "site"),
        (SITE, tables, "site", "tables"),
        (AGGREGATE, checkpoints, "tables", "checkpoints"),
        (SITE, checkpoints, "site", "checkpoints"),
    ):
        before = snapshot(out)
        capsys.readouterr()
        assert main(command.argv(references["new"], out)) == 1
        assert capsys.readouterr().err == (
            f"sinkbench {command.name}: {out} holds sinkbench's {held}, not {kind}; choose another --out, or remove "
            "that folder first\n"
        )
        assert snapshot(out) == before
    assert main(SITE.argv(references["new"], site)) == 0  # its own kind it replaces


def test_leftovers_are_matched_by_name_not_by_pattern(references: References, tmp_path: Path) -> None:
    """An ``--out`` named like a glob pattern cleans up its own leftovers only, not another output's."""
    other = tmp_path / ".out-other.staging-abc"
    other.mkdir()
    mine = tmp_path / ".out*.staging-abc"
    mine.mkdir()
    aggregate_submissions(references["new"], tmp_path / "out*")
    assert other.is_dir() and not mine.exists()
    assert (tmp_path / "out*" / MARKER).is_file()


def test_a_killed_import_leaves_every_entry_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``import-reported --force`` killed at each step: each entry folder is entirely old or entirely new, and the
    submissions still validate (a killed run leaves at most a hidden staging folder at the root, which the gate
    ignores)."""
    from sinkbench.submissions import load_submissions

    scratch = tmp_path / "scratch"  # a killed import cannot remove its temporary folder: keep it out of /tmp
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def csv_file(name: str, delta: str) -> Path:
        path = tmp_path / name
        path.write_text(
            "vlm,reference_llm,qk_norm,sink_strength,task,delta\n"
            f"org/vlm-a,org/llm-a,none,1.2,ifeval_strict,{delta}\norg/vlm-b,org/llm-b,none,0.8,ifeval_strict,{delta}\n",
            encoding="utf-8",
        )
        return path

    def argv(root: Path, csv: Path) -> list[str]:
        return ["import-reported", str(csv), "--source", "A. Author (2026).", "--out", str(root), "--force"]

    def deltas(root: Path) -> dict[str, float]:
        loaded = load_submissions(root)
        assert loaded.problems == (), loaded.problems
        return {entry.name: entry.scores["ifeval_strict"].reported_delta for entry in loaded.entries}

    old, new = csv_file("old.csv", "-3.0"), csv_file("new.csv", "-5.0")
    trace_root = tmp_path / "trace" / "submissions"
    assert main(argv(trace_root, old)) == 0
    assert run_child(argv(trace_root, new), trace=tmp_path / "trace.json") == 0
    assert deltas(trace_root) == {"vlm-a": -5.0, "vlm-b": -5.0}
    steps = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    for point in range(1, len(steps) + 1):
        root = tmp_path / f"kill-{point}" / "submissions"
        assert main(argv(root, old)) == 0
        assert run_child(argv(root, new), kill_at=point) == KILLED, steps[point - 1]
        found = deltas(root)
        assert set(found) == {"vlm-a", "vlm-b"} and set(found.values()) <= {-3.0, -5.0}, steps[point - 1]
        assert all(name.startswith(".pairs.") for name in os.listdir(root) if name != "pairs")
        assert sorted(os.listdir(root / "pairs")) == ["vlm-a", "vlm-b"], steps[point - 1]
        assert main(argv(root, new)) == 0 and deltas(root) == {"vlm-a": -5.0, "vlm-b": -5.0}
        assert sorted(os.listdir(root)) == ["pairs"], "the next run removes what the killed one left"


def test_the_published_folder_has_ordinary_permissions(references: References, tmp_path: Path) -> None:
    """Not the 0700 of a temporary folder (a web server must read the site): what ``mkdir`` gives, or the mode of
    the output it replaces."""
    umask = os.umask(0o022)
    os.umask(umask)
    out = tmp_path / "out"
    aggregate_submissions(references["new"], out)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask
    out.chmod(0o750)
    aggregate_submissions(references["old"], out)
    assert out.stat().st_mode & 0o777 == 0o750


@pytest.mark.parametrize("command", [AGGREGATE, SITE], ids=lambda command: command.name)
@pytest.mark.parametrize("nesting", ["out inside the submissions", "submissions inside out"])
def test_an_out_overlapping_the_submissions_is_refused_in_one_line(
    command: Command, nesting: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The output would land in the submissions (and fail the next validate) or replace them: refused before
    anything is written, a lock file included."""
    if nesting == "out inside the submissions":
        submissions = tmp_path / "sub"
        out = tmp_path / "elsewhere" / ".." / "sub" / "backbones" / "out"
    else:
        out = tmp_path / "out"
        submissions = out / "sub"
    shutil.copytree(FIXTURES, submissions)
    (tmp_path / "elsewhere").mkdir()
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert main(command.argv(submissions, out)) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"--out {out} and --submissions {submissions} overlap" in captured.err
    assert snapshot(tmp_path) == before
