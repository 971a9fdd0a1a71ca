"""The leaderboard is one MkDocs project (``mkdocs.yml`` and ``site/`` at the root, :mod:`sinkbench.leaderboard.plugin`):
``mkdocs build`` gives the site ``sinkbench site build`` gives, two builds are byte-identical, and the preview
(``mkdocs serve``) reloads after an edit of a template or a submission."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from boards import PROJECT_CHART_CACHE

from sinkbench.cli import main
from sinkbench.leaderboard.project import SiteBuildFailed, build_site
from sinkbench.leaderboard.sources import SOURCES_DIR, SiteSources
from sinkbench.publish import MARKER

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
EPOCH = "1796000000"
#: Seconds a build or a reload may take on a loaded 2-core machine before the test gives up.
PATIENCE = 240


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the MkDocs project (``mkdocs.yml``, ``site/``) with the test fixtures as its ``submissions/``."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copyfile(SOURCES_DIR / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(SOURCES_DIR / "site", root / "site", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(FIXTURES, root / "submissions")
    return root


def files(folder: Path) -> dict[str, bytes]:
    """Every file of a built site (path -> bytes), without sinkbench's output marker."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MARKER
    }


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=PATIENCE)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.slow  # mkdocs in a fresh interpreter
@pytest.mark.usefixtures("whole_site_configuration")
def test_mkdocs_build_gives_the_site_that_sinkbench_site_build_gives(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "by-mkdocs")],
        project,
    )
    monkeypatch.chdir(project)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    report = build_site(Path("submissions"), tmp_path / "by-sinkbench", sources=SiteSources(project))
    by_mkdocs, by_sinkbench = files(tmp_path / "by-mkdocs"), files(tmp_path / "by-sinkbench")
    assert by_mkdocs.keys() == by_sinkbench.keys()
    assert [name for name in by_mkdocs if by_mkdocs[name] != by_sinkbench[name]] == []
    pages = [name for name in by_mkdocs if name.endswith(".html") and name != "404.html"]
    assert "pairs/tiny-vlm.html" in pages and report.pages == len(pages)


@pytest.mark.slow  # fresh interpreters
@pytest.mark.usefixtures("whole_site_configuration")
def test_two_builds_of_the_same_tree_are_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository's own submissions, built by the command line in another process, and in this one without the
    build's shortcuts (``benchmarks/bench_machinery.py``'s pieces: the theme's shared parts rendered per page, the
    default garbage collector, the charts rendered in this process). They change no byte. (Without ``raw_blocks``
    Markdown keeps the blocks' marker comments and breaks lines between tags: the same HTML, other bytes.)"""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from bench_machinery import PIECES

    run([sys.executable, "-m", "sinkbench", "site", "build", "--out", str(tmp_path / "first")], ROOT)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    switches = [switch for piece, switches in PIECES.items() if piece != "raw_blocks" for switch in switches]
    for module, name, replacement in switches:
        monkeypatch.setattr(module, name, replacement)
    build_site(Path("submissions"), tmp_path / "second")
    first, second = files(tmp_path / "first"), files(tmp_path / "second")
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []
    assert any(name.startswith("plots/scatter-") for name in first)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, OSError):
        return None


def _wait_for(url: str, text: str, process: subprocess.Popen) -> str:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        assert process.poll() is None, "the preview server stopped"
        body = _get(url)
        if body is not None and text in body:
            return body
        time.sleep(0.5)
    raise AssertionError(f"{url} never showed {text!r}")


@pytest.mark.slow  # a preview server in a fresh interpreter
def test_the_preview_rebuilds_after_a_template_and_a_submission_change(project: Path) -> None:
    port = _free_port()
    script = (
        "import sys; from pathlib import Path; from sinkbench.leaderboard.project import serve_site; "
        "from sinkbench.leaderboard.sources import SiteSources; "
        f"serve_site(Path('submissions'), sources=SiteSources(Path('.')), port={port})"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=project,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/leaderboard.html"
    try:
        _wait_for(url, "<h1", process)
        template = project / "site" / "templates" / "leaderboard.md.j2"
        template.write_text(
            template.read_text(encoding="utf-8").replace("# Leaderboard", "# Board 51f0"), "utf-8"
        )
        _wait_for(url, "Board 51f0", process)
        metadata = project / "submissions" / "pairs" / "tiny-vlm-reported" / "metadata.json"
        data = json.loads(metadata.read_text(encoding="utf-8"))
        data["vlm"]["display_name"] = "Renamed 7c2e"
        metadata.write_text(json.dumps(data), encoding="utf-8")
        _wait_for(url, "Renamed 7c2e", process)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.mark.parametrize("epoch", ["abc", "-5", "99999999999999999999"])
def test_a_bad_source_date_epoch_is_one_line(
    epoch: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    argv = ["site", "build", "--submissions", str(FIXTURES), "--out", str(tmp_path / "site")]
    assert main(argv) == 1
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and "Traceback" not in printed
    assert printed.startswith(
        f"sinkbench site build: SOURCE_DATE_EPOCH is {epoch!r}; set it to a whole number"
    )
    assert not (tmp_path / "site").exists()


def test_a_strict_build_failure_shows_the_warning_that_stopped_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "site" / "docs" / "broken.md").write_text(
        "See [the missing page](missing.md).\n", encoding="utf-8"
    )
    monkeypatch.chdir(project)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    with pytest.raises(SiteBuildFailed, match="strict"):  # charts from the project's cache: no second process
        build_site(
            Path("submissions"),
            tmp_path / "site",
            sources=SiteSources(project),
            chart_cache=PROJECT_CHART_CACHE,
        )
    shown = capsys.readouterr().err
    assert "broken.md" in shown and "missing.md" in shown
    assert not (tmp_path / "site").exists()


@pytest.mark.slow  # three builds with the Guide's API page
@pytest.mark.usefixtures("whole_site_configuration")
def test_a_finished_build_is_released(tmp_path: Path) -> None:
    """``mkdocs serve`` rebuilds in one process: a finished build leaves nothing alive (the API page's libraries
    memoised each build's configuration, and with it the whole site, until the plugin empties their memos)."""
    from mkdocs.config.defaults import MkDocsConfig

    alive = []
    for _ in range(3):
        build_site(FIXTURES, tmp_path / "site")
        gc.collect()
        alive.append(
            sum(type(item) is MkDocsConfig for item in gc.get_objects())
        )  # no isinstance: it would wake
        # deprecated attributes of every object (torch warns)
    assert alive[1] == alive[2] <= 2, alive
