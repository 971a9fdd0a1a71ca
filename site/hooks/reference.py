"""MkDocs hook that writes the Guide's generated Reference pages at build time, so they cannot drift from the code.

A page under ``guide/reference/`` holds its own prose and one marker line, ``<!-- sinkbench-reference: NAME -->``,
which this hook replaces with Markdown generated from the code:

* ``cli``: every command's and subcommand's ``--help``, from :func:`sinkbench.cli.build_parser`;
* ``schemas``: one table per pydantic model of the files a user writes or reads, from ``model_json_schema()``.

(The Python API page is rendered by mkdocstrings from the docstrings.) ``mkdocs.yml`` lists this file under
``hooks:``; the wheel installs it with the site (``sinkbench.site``'s package data), beside the copied
``mkdocs.yml``, so ``sinkbench site build`` runs it from an installed sinkbench too.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from mkdocs.exceptions import PluginError

#: Width of the generated ``--help`` text (argparse would otherwise take the building terminal's).
HELP_WIDTH = 100
_MARKER = re.compile(r"^<!-- sinkbench-reference: ([a-z]+) -->$", re.MULTILINE)


def walk_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of every subcommand under ``parser`` (``("site", "build")``), depth first, in help order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                name = choice.dest
                yield (*path, name)
                yield from walk_commands(action.choices[name], (*path, name))


def command_anchor(path: tuple[str, ...]) -> str:
    """The heading id of a command's section: ``sinkbench-site-build``."""
    return "-".join(("sinkbench", *path))


def _subparser(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def _help_text(parser: argparse.ArgumentParser) -> str:
    """``parser``'s ``--help`` at :data:`HELP_WIDTH` columns, whatever the terminal."""
    formatter_class = parser.formatter_class
    parser.formatter_class = functools.partial(formatter_class, width=HELP_WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = formatter_class


def _fenced(text: str) -> str:
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", text))])
    return f"{fence}text\n{text}\n{fence}"


def cli_reference() -> str:
    """Markdown: a table of contents, then one section per command (a level-3 one per subcommand) with its help."""
    from sinkbench.cli import build_parser

    parser = build_parser()
    commands = list(walk_commands(parser))
    contents = [
        f"{'    ' * (len(path) - 1)}- [`sinkbench {' '.join(path)}`](#{command_anchor(path)})"
        for path in commands
    ]
    sections = [f"## `sinkbench` {{#sinkbench}}\n\n{_fenced(_help_text(parser))}"]
    for path in commands:
        level = "#" * (len(path) + 1)
        text = _help_text(_subparser(parser, path))
        sections.append(
            f"{level} `sinkbench {' '.join(path)}` {{#{command_anchor(path)}}}\n\n{_fenced(text)}"
        )
    return "\n".join(["- [`sinkbench`](#sinkbench)", *contents]) + "\n\n" + "\n\n".join(sections)


def schema_models() -> list[tuple[str, type]]:
    """The documented files, each as a title and the pydantic model at its root."""
    from sinkbench.submissions.schema import (
        BackboneMetadata,
        IfevalSample,
        LmEvalResults,
        PairMetadata,
        SinkProfile,
    )

    return [
        ("`metadata.json` of a pair", PairMetadata),
        ("`metadata.json` of a backbone", BackboneMetadata),
        ("The screen report (`sinkbench screen --output`)", SinkProfile),
        ("lm-eval's results file (`results_<date>.json`)", LmEvalResults),
        ("A line of an `ifeval_strict` samples file", IfevalSample),
    ]


def _code(text: str) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds."""
    ticks = "`" * max([1, *(len(run) + 1 for run in re.findall(r"`+", text))])
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _schema_type(schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A JSON schema's type in a few words: ``list of string``, ``ModelRef or null``, ``"pair"``."""
    if "$ref" in schema:
        return link(schema["$ref"].rsplit("/", 1)[-1])
    if "const" in schema:
        return _code(json.dumps(schema["const"]))
    if "enum" in schema:
        return " or ".join(_code(json.dumps(value)) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(_schema_type(part, link) for part in schema[key]))
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_schema_type(schema.get('items', {}), link)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_schema_type(schema['additionalProperties'], link)}"
    return str(kind)


#: JSON schema keywords bounding a size, with the unit each counts.
_SIZES = {
    ("minLength", "maxLength"): "characters",
    ("minItems", "maxItems"): "items",
    ("minProperties", "maxProperties"): "keys",
}
#: JSON schema keywords bounding a number, with how each reads.
_BOUNDS = {"minimum": "≥ {}", "exclusiveMinimum": "> {}", "maximum": "≤ {}", "exclusiveMaximum": "< {}"}


def _constraints(schema: dict[str, Any]) -> str:
    """The limits a field's schema sets, in words: ``1 to 200 characters; matches `^[a-z]+$` ``."""
    parts = [form.format(schema[key]) for key, form in _BOUNDS.items() if key in schema]
    for (low, high), unit in _SIZES.items():
        if low in schema and high in schema:
            parts.append(f"{schema[low]} to {schema[high]} {unit}")
        elif low in schema or high in schema:
            parts.append(
                f"at least {schema[low]} {unit}" if low in schema else f"at most {schema[high]} {unit}"
            )
    if "pattern" in schema:
        parts.append(f"matches {_code(schema['pattern'])}")
    parts.extend(filter(None, (_constraints(part) for part in schema.get("anyOf", []))))
    return "; ".join(parts)


def _model_table(name: str, schema: dict[str, Any], link: Callable[[str], str]) -> str:
    """A model's section: its docstring, a row per field (by its JSON key), and whether other keys are refused."""
    required = set(schema.get("required", []))
    rows = ["| Field | Type | Required | Default | Constraints and description |", "|---|---|---|---|---|"]
    for field, spec in schema.get("properties", {}).items():
        default = _code(json.dumps(spec["default"], ensure_ascii=False)) if "default" in spec else ""
        description = " ".join(spec.get("description", "").split()).replace("|", "\\|")
        notes = "; ".join(part for part in (_constraints(spec), description) if part)
        rows.append(
            f"| {_code(field)} | {_schema_type(spec, link)} | {'yes' if field in required else 'no'} | "
            f"{default} | {notes} |"
        )
    closing = (
        "Other fields are refused."
        if schema.get("additionalProperties") is False
        else "Other fields are kept."
    )
    description = " ".join(schema.get("description", "").split())
    return f"### `{name}` {{#{name.lower()}}}\n\n{description}\n\n" + "\n".join(rows) + f"\n\n{closing}"


def schema_reference() -> str:
    """Markdown: for each documented file, the table of its root model, then those of the models it contains that
    no earlier file showed."""
    sections, shown = [], set()
    for title, root in schema_models():
        parts = [f"## {title}"]
        schema = root.model_json_schema(by_alias=True)
        definitions = schema.pop("$defs", {})
        for name, model_schema in [(root.__name__, schema), *definitions.items()]:
            if name not in shown:
                shown.add(name)
                parts.append(_model_table(name, model_schema, lambda ref: f"[`{ref}`](#{ref.lower()})"))
        sections.append("\n\n".join(parts))
    return "\n\n".join(sections)


#: What each marker name is replaced with.
GENERATORS: dict[str, Callable[[], str]] = {"cli": cli_reference, "schemas": schema_reference}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each reference marker of a page with its generated Markdown."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise PluginError(
                f"{page.file.src_uri}: unknown reference marker {name!r}; use one of {sorted(GENERATORS)}."
            )
        return GENERATORS[name]()

    return _MARKER.sub(generated, markdown)


#: The page mkdocstrings renders the Python API on.
API_PAGE = "guide/reference/api.md"
#: A Sphinx role that a docstring wrote and mkdocstrings leaves as text: ``:func:<code>~a.b</code>``.
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):<code>(~?)([\w.]+)</code>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """On the API page, show a docstring's Sphinx role as its name alone, linked where the page documents it."""
    if page.file.src_uri != API_PAGE:
        return html
    anchors = set(re.findall(r'\bid="([\w.]+)"', html))

    def plain(match: re.Match[str]) -> str:
        short, target = match.groups()
        code = f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"
        return f'<a href="#{target}">{code}</a>' if target in anchors else code

    return _ROLE.sub(plain, html)
