"""The site build's shortcuts: the charts rendered in a second process (:class:`sinkbench.charts.Rendering`, gone
with its builder), the garbage collector started less often (:func:`sinkbench.leaderboard.project.fewer_collections`),
and the theme's shared parts rendered once (:mod:`sinkbench.leaderboard.shared_partials`). That they change no byte
of a built site is tested in ``tests/leaderboard/test_site_project.py``."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest

from sinkbench import charts
from sinkbench.leaderboard import generate, shared_partials
from sinkbench.leaderboard.plots import CategoryChart
from sinkbench.leaderboard.project import BUILD_GC_THRESHOLD, build_site, fewer_collections

pytestmark = pytest.mark.timeout(120)
FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"


def _specs(count: int) -> list[dict]:
    return [CategoryChart(((f"category {i}", i + 1),), f"pair {i}").spec() for i in range(count)]


def test_the_second_process_renders_what_this_one_would_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts.Rendering, "MIN_FOR_PROCESS", 1)
    monkeypatch.setattr(charts.Rendering, "CHUNK", 2)
    monkeypatch.setattr(charts, "_cores", lambda: 2)
    specs = _specs(8)
    rendering = charts.Rendering(specs)
    first = rendering._futures[0]
    deadline = time.monotonic() + 60
    while not (first.running() or first.done()) and time.monotonic() < deadline:
        time.sleep(0.01)
    svgs = rendering.result()
    assert not first.cancelled()  # the second process drew at least its first chunk
    assert svgs == [charts.static_svg(spec) for spec in specs]


def test_a_second_process_that_dies_leaves_its_charts_to_this_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts.Rendering, "MIN_FOR_PROCESS", 1)
    monkeypatch.setattr(charts, "_cores", lambda: 2)
    specs = _specs(3)
    rendering = charts.Rendering(specs)
    assert rendering._process is not None
    deadline = time.monotonic() + 60
    while not rendering._process.pool._processes and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid in list(rendering._process.pool._processes):
        os.kill(pid, signal.SIGKILL)  # as if killed for memory
    assert rendering.result() == [charts.static_svg(spec) for spec in specs]


@pytest.mark.slow  # a fresh interpreter and a spawned process
def test_the_second_process_exits_when_its_builder_is_killed(tmp_path: Path) -> None:
    """A build killed outright (SIGKILL) cannot stop its rendering process: the process notices and exits."""
    code = (
        "import os, time\n"
        "from sinkbench import charts\n"
        "process = charts.start_process(bundle=False)\n"
        "process.pool.submit(str).result()\n"
        "print(*process.pool._processes, flush=True)\n"
        "time.sleep(600)\n"
    )
    builder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        (worker,) = (int(pid) for pid in builder.stdout.readline().split())
    finally:
        builder.kill()
        builder.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, or a process of that number that is not ours, counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_a_chart_that_cannot_be_drawn_raises_and_stops_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charts, "_cores", lambda: 2)
    rendering = charts.Rendering([*_specs(4), {"mark": "no-such-mark"}])
    assert rendering._process is not None
    with pytest.raises(ValueError, match="conversion failed"):
        rendering.result()
    assert rendering._process is None
    assert "window.vegaEmbed" in rendering.script()  # bundled by the process before it stopped, or here


def test_cached_charts_between_chunks_come_back_in_order(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Charts from the cache sit between chunks the second process draws and chunks drawn here."""
    monkeypatch.setattr(charts, "_cores", lambda: 2)
    monkeypatch.setattr(charts.Rendering, "CHUNK", 2)
    specs = _specs(8)
    cache = charts.ChartCache(tmp_path)
    charts.Rendering([specs[1], specs[5]], cache).result()  # these two come from the cache
    rendering = charts.Rendering(specs, cache)
    assert rendering._process is not None and len(rendering._chunks) == 3  # six to draw, two a chunk
    assert rendering.result() == [charts.static_svg(spec) for spec in specs]


def test_few_charts_or_one_core_start_no_second_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert charts.Rendering(_specs(2))._process is None  # fewer than MIN_FOR_PROCESS
    monkeypatch.setattr(charts.Rendering, "MIN_FOR_PROCESS", 1)
    monkeypatch.setattr(charts, "_cores", lambda: 1)
    rendering = charts.Rendering(_specs(2))
    assert rendering._process is None and len(rendering.result()) == 2


def test_the_collector_thresholds_are_restored_after_a_build_even_a_failed_one() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (BUILD_GC_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("MkDocs stopped")
    assert gc.get_threshold() == before


def _page(url: str, in_nav: bool) -> SimpleNamespace:
    inclusion = SimpleNamespace(is_not_in_nav=lambda: not in_nav)
    return SimpleNamespace(url=url, file=SimpleNamespace(inclusion=inclusion))


def _environment(renders: list[str]) -> jinja2.Environment:
    """A theme with a navigation partial that counts its renders and shows the lit tab and the page's folder."""

    def count(name: str) -> str:
        renders.append(name)
        return ""

    templates = {
        "partials/nav.html": "{{ count('nav') }}nav {{ page.url.rsplit('/', 1)[0] }} "
        "{% for item in nav.items if item.active %}{{ item.title }}{% endfor %}",
        "partials/search.html": "{{ count('search') }}search",
        "base.html": "{% block styles %}{{ count('styles') }}css{% endblock %}|{% include 'partials/nav.html' %}|"
        "{% include 'partials/search.html' %}|{{ page.url }}",
    }
    env = jinja2.Environment(loader=jinja2.DictLoader(templates), autoescape=True)
    env.globals["count"] = count
    return env


def test_a_shared_part_is_rendered_once_per_folder_and_lit_tab_and_never_for_a_page_in_the_navigation() -> (
    None
):
    renders: list[str] = []
    env = _environment(renders)
    shared_partials.share_partials(env)
    pairs, backbones = (
        SimpleNamespace(title="Pairs", active=False),
        SimpleNamespace(title="Backbones", active=False),
    )
    nav = SimpleNamespace(items=[pairs, backbones])
    template = env.get_template("base.html")

    def render(url: str, in_nav: bool = False) -> str:
        return template.render(page=_page(url, in_nav), nav=nav)

    pairs.active = True
    first, second = render("pairs/a.html"), render("pairs/b.html")
    assert first == "css|nav pairs Pairs|search|pairs/a.html"
    assert second == "css|nav pairs Pairs|search|pairs/b.html"
    assert renders == ["styles", "nav", "search"]  # the second page reused all three
    pairs.active, backbones.active = False, True
    assert render("backbones/c.html") == "css|nav backbones Backbones|search|backbones/c.html"
    assert (
        render("pairs/d.html") == "css|nav pairs Backbones|search|pairs/d.html"
    )  # same folder, other tab lit
    renders.clear()
    assert (
        render("pairs/leaderboard.html", in_nav=True)
        == "css|nav pairs Backbones|search|pairs/leaderboard.html"
    )
    assert renders == ["nav"]  # a page in the navigation renders it for itself


def test_a_theme_without_a_shared_part_is_left_alone() -> None:
    env = jinja2.Environment(loader=jinja2.DictLoader({"base.html": "{{ page.url }}"}))
    shared_partials.share_partials(env)
    assert env.get_template("base.html").render(page=_page("x.html", False), nav=None) == "x.html"


def test_the_chart_cache_gives_back_what_was_rendered_and_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = charts.ChartCache(tmp_path / "cache")
    specs = _specs(2)  # fewer than MIN_FOR_PROCESS: drawn in this process
    first = charts.Rendering(specs, cache).result()
    assert len(list(cache.folder.glob("*.svg"))) == 2

    def no_drawing(chunk: list) -> list:
        raise AssertionError("drawn although kept")

    monkeypatch.setattr(charts, "render_chunk", no_drawing)
    assert charts.Rendering(specs, cache).result() == first
    changed = [dict(specs[0], title="another title"), specs[1]]
    monkeypatch.undo()
    assert cache.get(cache.path(changed[0])) is None  # another specification, another file
    assert charts.Rendering(changed, cache).result()[1] == first[1]


def test_a_broken_or_unwritable_cache_only_costs_a_rendering(tmp_path: Path) -> None:
    specs = _specs(1)
    cache = charts.ChartCache(tmp_path / "cache")
    expected = charts.Rendering(specs, cache).result()
    cache.path(specs[0]).write_bytes(b"\xff\xfe not text")
    assert charts.Rendering(specs, cache).result() == expected  # redrawn, and kept again
    assert cache.get(cache.path(specs[0])) == expected[0]
    blocked = charts.ChartCache(tmp_path / "a-file")
    blocked.folder.write_text("not a folder")
    assert charts.Rendering(specs, blocked).result() == expected


def test_the_cache_forgets_what_no_build_used_for_a_week(tmp_path: Path) -> None:
    cache = charts.ChartCache(tmp_path / "cache")
    specs = _specs(2)
    charts.Rendering(specs, cache).result()
    week_ago = time.time() - 8 * 86400
    for path in cache.folder.iterdir():
        os.utime(path, (week_ago, week_ago))
    charts.Rendering(specs[:1], cache).result()  # uses the first one (touched), not the second
    assert [path.name for path in cache.folder.iterdir()] == [cache.path(specs[0]).name]


def test_a_rebuild_from_a_full_cache_bundles_nothing_and_starts_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart script is kept beside the charts: a rebuild whose cache holds it and every chart starts no second
    process (a core for about a second a build) and publishes the same bytes."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796000000")
    cache = tmp_path / "cache"
    build_site(FIXTURES, tmp_path / "first", chart_cache=cache)
    kept = charts.ChartCache(cache)
    script = (tmp_path / "first" / charts.SCRIPT).read_text(encoding="utf-8")
    assert kept.get(kept.script_path) == script == charts.script_bundle()

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a second process or a bundle although the cache holds everything")

    for module in (charts, generate):
        monkeypatch.setattr(module, "start_process", refused)
    monkeypatch.setattr(charts, "script_bundle", refused)
    week_ago = time.time() - 8 * 86400  # unused for a week: the build that finds it keeps it from the pruning
    os.utime(kept.script_path, (week_ago, week_ago))
    report = build_site(FIXTURES, tmp_path / "second", chart_cache=cache)
    assert report.plots > charts.Rendering.MIN_FOR_PROCESS
    first, second = (_files(tmp_path / name) for name in ("first", "second"))
    assert first.keys() == second.keys() and [name for name in first if first[name] != second[name]] == []
    kept.script_path.write_bytes(b"\xff not text")  # a broken file: bundled again, and kept again
    monkeypatch.undo()
    assert charts.Rendering([], kept).script() == script == kept.get(kept.script_path)


def _files(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()
    }


@pytest.mark.slow  # a fresh interpreter
def test_a_script_without_a_main_guard_runs_once(tmp_path: Path) -> None:
    """The rendering process is spawned without the caller's main script, which would otherwise run again in it."""
    script = tmp_path / "unguarded.py"
    script.write_text(
        "from sinkbench import charts\n"
        "from sinkbench.leaderboard.plots import CategoryChart\n"
        "print('script ran', flush=True)\n"
        "specs = [CategoryChart(((f'c{i}', i + 1),), f'p{i}').spec() for i in range(6)]\n"
        "assert len(charts.Rendering(specs).result()) == 6\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("script ran") == 1 and "Traceback" not in done.stderr
