"""The Guide's Reference pages, generated when the site builds: every command's help (from the parser), the Python
API (mkdocstrings, from the docstrings) and the file schemas (from the pydantic models). One build, shared."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError
from pydantic import BaseModel

from sinkbench.cli import build_parser
from sinkbench.leaderboard.sources import SOURCES_DIR
from sinkbench.submissions import schema

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
REFERENCE = Path("guide") / "reference"
#: The library calls the API page documents: every one a user is pointed to from the Guide.
API_OBJECTS = [
    "sinkbench.screen.screen",
    "sinkbench.sink.probe_model.probe_model",
    "sinkbench.models.model_dir",
    "sinkbench.models.load_model",
    "sinkbench.sink.metrics.SinkMetric",
    "sinkbench.sink.metrics.SINK_METRICS",
    "sinkbench.monitor.SinkMonitor",
    "sinkbench.monitor.SinkStrengthCallback",
    "sinkbench.protect.protect_sink_heads",
    "sinkbench.sink.heads.map_heads",
    "sinkbench.sink.heads.HeadMap",
    "sinkbench.sink.margin.pair_margin",
    "sinkbench.interventions.displacement.weight_displacement",
    "sinkbench.interventions.random_control.random_control",
    "sinkbench.interventions.checkpoint.write_intervention",
    "sinkbench.interventions.qk_norm.inject_qk_norm",
    "sinkbench.interventions.merging.merge",
    "sinkbench.extract.pipeline.extract_lm",
    "sinkbench.extract.implant.implant_lm",
    "sinkbench.submissions.gate.load_submissions",
    "sinkbench.submissions.gate.load_valid_entries",
    "sinkbench.tables.aggregate.aggregate_submissions",
    "sinkbench.tables.build.build_tables",
]
#: The models at the root of each documented file.
SCHEMA_ROOTS = [
    schema.PairMetadata,
    schema.BackboneMetadata,
    schema.SinkProfile,
    schema.LmEvalResults,
    schema.IfevalSample,
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once by ``sinkbench site build``, from a folder outside the repository."""
    work = tmp_path_factory.mktemp("reference")
    done = subprocess.run(
        [sys.executable, "-m", "sinkbench", "site", "build", "--submissions", str(FIXTURES), "--out", "site"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return work / "site"


def _page(site: Path, name: str) -> str:
    html = (site / REFERENCE / name).read_text(encoding="utf-8")
    return html[html.index("<article") : html.index("</article>")]


def _text(html: str) -> str:
    """The visible text of ``html``, its whitespace collapsed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def _section(html: str, anchor: str) -> str:
    """The HTML from the heading with id ``anchor`` to the next heading."""
    start = html.index(f'id="{anchor}"')
    following = re.search(r"<h[1-6][ >]", html[start:])
    return html[start : start + following.start()] if following else html[start:]


def _unwrapped(text: str) -> str:
    """``text`` with its whitespace collapsed and words broken at a hyphen joined (argparse wraps there)."""
    return " ".join(text.split()).replace("- ", "-")


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of ``parser`` (the top one first), with its path of names, through every subparser."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


@pytest.mark.slow  # the site built in a fresh interpreter (the site fixture)
def test_the_cli_page_has_every_commands_help_and_a_contents_entry(site: Path) -> None:
    html = _page(site, "cli.html")
    commands = _commands(build_parser())
    assert len(commands) > 20  # the parser's whole tree, nested commands included
    for path, parser in commands:
        anchor = "-".join(("sinkbench", *path))
        assert f'href="#{anchor}"' in html, f"no contents entry for sinkbench {' '.join(path)}"
        # the help as the parser prints it, at any width: the same words in the same order
        assert _unwrapped(parser.format_help()) in _unwrapped(_text(_section(html, anchor))), anchor


@pytest.mark.slow  # the site built in a fresh interpreter (the site fixture)
def test_the_api_page_renders_each_named_object_with_its_docstring(site: Path) -> None:
    html = _page(site, "api.html")
    for name in API_OBJECTS:
        module, _, attribute = name.rpartition(".")
        documented = getattr(importlib.import_module(module), attribute)
        section = _text(_section(html, name))
        if callable(documented):
            for parameter in inspect.signature(documented).parameters:
                assert parameter in section, f"{name}: parameter {parameter} not shown"
        if inspect.isfunction(documented) or inspect.isclass(documented):
            summary = inspect.getdoc(documented).split("\n\n")[0]
            # the docstring's reST markup shows as plain names: ``code``, :func:`a.b`, :func:`~a.b` as b
            plain = re.sub(
                r":\w+:`~[\w.]*?(\w+)`|:\w+:`([\w.]+)`", lambda m: m.group(1) or m.group(2), summary
            )
            words = " ".join(plain.replace("``", "").split())[:60]
            assert words in section, f"{name}: summary {words!r} not shown"
    assert not re.search(r":(func|class|mod|meth|attr|data):", _text(html)), "a Sphinx role is shown as text"


def _models(roots: list[type[BaseModel]]) -> list[type[BaseModel]]:
    """The root models and every model their fields contain, each once."""
    found: list[type[BaseModel]] = []
    for root in roots:
        for name in [root.__name__, *root.model_json_schema().get("$defs", {})]:
            model = getattr(schema, name)
            if model not in found:
                found.append(model)
    return found


@pytest.mark.slow  # the site built in a fresh interpreter (the site fixture)
def test_the_schema_page_lists_every_field_of_each_model(site: Path) -> None:
    html = _page(site, "schemas.html")
    models = _models(SCHEMA_ROOTS)
    assert schema.ModelRef in models and schema.ProfileMatrix in models
    for model in models:
        rows = re.findall(
            r"<tr>\s*<td><code>([^<]+)</code></td>\s*<td>.*?</td>\s*<td>(yes|no)</td>",
            _section(html, model.__name__.lower()),
            flags=re.DOTALL,
        )
        expected = {(field.alias or name): field.is_required() for name, field in model.model_fields.items()}
        assert {unescape(key): value == "yes" for key, value in rows} == expected, model.__name__


def _hook():
    path = SOURCES_DIR / "site" / "hooks" / "reference.py"
    spec = importlib.util.spec_from_file_location("reference_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_unknown_reference_marker_stops_the_build() -> None:
    page = SimpleNamespace(file=SimpleNamespace(src_uri="guide/reference/x.md"))
    with pytest.raises(PluginError, match=r"guide/reference/x\.md: unknown reference marker 'clii'"):
        _hook().on_page_markdown("# X\n\n<!-- sinkbench-reference: clii -->\n", page, None, None)


def test_every_reference_page_has_its_marker() -> None:
    """A marker edited away would leave the page without its generated part and the build without a word."""
    docs = SOURCES_DIR / "site" / "docs" / REFERENCE
    for name in _hook().GENERATORS:
        assert f"<!-- sinkbench-reference: {name} -->" in (docs / f"{name}.md").read_text(encoding="utf-8")
