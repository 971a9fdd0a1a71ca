"""The site build's shortcuts: work done in a forked worker (:mod:`sinkbench.leaderboard.background`), the garbage
collector started less often (:func:`sinkbench.leaderboard.project.fewer_collections`), and the theme's shared parts
rendered once (:mod:`sinkbench.leaderboard.shared_partials`). That they change no byte of a built site is tested in
``tests/leaderboard/test_site_project.py``."""

from __future__ import annotations

import gc
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest

from sinkbench.leaderboard import background, shared_partials
from sinkbench.leaderboard.project import BUILD_GC_THRESHOLD, fewer_collections

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork whatever threads the test runner keeps (the worker's work here takes no lock)."""
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork on this platform: the work is always done in the process itself")
    monkeypatch.setattr(background, "can_fork", lambda: True)


def test_the_worker_returns_what_the_work_returns_and_runs_in_another_process(forking: None) -> None:
    parent = os.getpid()
    result = background.in_background(lambda: (os.getpid(), {"plots/a.svg": "<svg/>" * 10_000}))
    worker, texts = result()
    assert worker != parent
    assert texts == {"plots/a.svg": "<svg/>" * 10_000}


def test_an_error_in_the_worker_is_raised_where_the_result_is_asked_for(forking: None) -> None:
    def work() -> None:
        raise ValueError("chart 3 has no points")

    result = background.in_background(work)
    with pytest.raises(ValueError, match="chart 3 has no points"):
        result()


def test_a_worker_that_dies_leaves_the_work_to_this_process(forking: None) -> None:
    parent = os.getpid()

    def work() -> int:
        if os.getpid() != parent:
            os._exit(9)  # as if killed for memory
        return 42

    assert background.in_background(work)() == 42


def test_no_fork_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not background.can_fork()
        parent = os.getpid()
        assert background.in_background(os.getpid)() == parent  # done here
    finally:
        stop.set()
        thread.join()


def test_no_fork_on_one_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert not background.can_fork()


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


def test_the_writer_threads_write_every_file_and_wait_raises_the_first_error(tmp_path: Path) -> None:
    writer = background.FileWriter()
    targets = [tmp_path / f"page-{index}.html" for index in range(50)]
    for index, target in enumerate(targets):
        writer.submit(lambda target=target, index=index: target.write_text(f"page {index}"))
    writer.wait()
    assert [target.read_text() for target in targets] == [f"page {index}" for index in range(50)]
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("sinkbench-write")]

    failing = background.FileWriter()
    failing.submit(lambda: (tmp_path / "missing-folder" / "chart.svg").write_text("<svg/>"))
    with pytest.raises(FileNotFoundError, match=r"chart\.svg"):
        failing.wait()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("sinkbench-write")]


def test_shared_tasks_run_once_each_across_this_process_and_a_forked_worker(forking: None) -> None:
    parent = os.getpid()
    tasks = background.SharedTasks([lambda index=index: (index, os.getpid()) for index in range(40)])
    there = background.in_background(tasks.run)
    here = tasks.run()
    there = there()
    assert sorted([*here, *there]) == list(range(40))  # every task once, in one process or the other
    assert all(pid == parent for _, pid in here.values())
    assert all(pid != parent for _, pid in there.values())
    assert all(result[0] == index for index, result in {**here, **there}.items())


def test_charts_a_dead_worker_took_are_drawn_by_the_build(
    forking: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sinkbench.leaderboard.generate import generate_site
    from sinkbench.leaderboard.pages import PageRenderer, make_environment
    from sinkbench.leaderboard.sources import SiteSources

    sources = SiteSources()
    submissions = Path(__file__).parents[1] / "fixtures" / "submissions"

    def generate() -> dict[str, str]:
        renderer = PageRenderer(make_environment(sources.templates), sources.docs)
        return generate_site(submissions, renderer, experiments_dir=None).charts

    expected = generate()
    parent, run = os.getpid(), background.SharedTasks.run

    def take_two_then_die(self: background.SharedTasks) -> dict:
        if os.getpid() == parent:
            return run(self)
        self._take(), self._take()  # two charts taken, never sent back
        os._exit(9)

    monkeypatch.setattr(background.SharedTasks, "run", take_two_then_die)
    assert len(expected) > 2
    assert generate() == expected
