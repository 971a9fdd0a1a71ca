"""Every code block of the Guide (``site/docs/guide/``; its generated Reference aside) runs as written.

A page's examples are its ``##`` sections: the ``bash`` and ``python`` blocks of one section run in order, each in a
fresh process with a timeout (so the examples are in the slow tier), in one temporary folder laid out like a clone's
root (a copy of ``submissions/``, the test fixtures at ``tests/fixtures``, and ``../shared/data`` where the
section needs the real data). A ``text`` block right after a run block is that block's expected output: its lines
must appear in the output in order, with a line ``...`` standing for any lines. A ``text`` block after prose is
shown, not run. A section states what it needs in an HTML comment, ``<!-- guide-test: OPTION ... -->``:

* ``data``: ``../shared/data`` holds the real evaluation files (skipped, with the reason, where they are absent);
* ``after=PAGE#SLUG``: the section starts from a copy of what that section made (run once per session, after
  what it needs in turn);
* ``install``: install commands, not run here: each line must be one of the README's, whose set-up line CI runs.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "site" / "docs" / "guide"
SHARED_DATA = ROOT.parent / "shared" / "data"
#: Options a section may state, and the seconds one block may run.
OPTIONS = {"data", "install"}
BLOCK_TIMEOUT = 840
MARKER = re.compile(r"<!-- guide-test: (.*?) -->")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced block of a section: its language, its text, and the output it promises (or None)."""

    language: str
    code: str
    expected: str | None


@dataclass(frozen=True)
class Example:
    """One ``##`` section of a Guide page, with the options its marker states."""

    page: str
    slug: str
    blocks: tuple[Block, ...]
    options: frozenset[str]
    after: str | None

    @property
    def id(self) -> str:
        """``page#slug``, as ``after=`` names it."""
        return f"{self.page}#{self.slug}"


def _slug(heading: str) -> str:
    """MkDocs' anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"[\s]+", "-", text)


def _blocks(text: str) -> tuple[Block, ...]:
    """The run blocks of a section, each with the ``text`` block that directly follows it."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for index, fence in enumerate(fences):
        language = fence.group(1)
        if language not in {"bash", "python"}:
            continue
        expected = None
        if index + 1 < len(fences):
            following = fences[index + 1]
            if following.group(1) == "text" and not text[fence.end() : following.start()].strip():
                expected = following.group(2)
        blocks.append(Block(language, fence.group(2), expected))
    return tuple(blocks)


def _examples(page: Path) -> list[Example]:
    name = page.relative_to(GUIDE).as_posix()
    sections = re.split(r"^## ", page.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
    examples = []
    for section in sections:
        heading = section.split("\n", 1)[0]
        words = " ".join(MARKER.findall(section)).split()
        after = next((word.split("=", 1)[1] for word in words if word.startswith("after=")), None)
        options = frozenset(word for word in words if not word.startswith("after="))
        unknown = options - OPTIONS
        assert not unknown, f"{name}#{_slug(heading)}: unknown guide-test option(s) {sorted(unknown)}"
        blocks = _blocks(section)
        if blocks:
            examples.append(Example(name, _slug(heading), blocks, options, after))
    return examples


PAGES = sorted(path for path in GUIDE.glob("*.md"))
EXAMPLES = {example.id: example for page in PAGES for example in _examples(page)}


def _chain(example: Example) -> list[Example]:
    """The sections that must run first (``after=``, followed transitively), then the example itself."""
    chain = [example]
    while chain[0].after is not None:
        assert chain[0].after in EXAMPLES, f"{chain[0].id}: after={chain[0].after} names no section with code"
        chain.insert(0, EXAMPLES[chain[0].after])
    return chain


def _needs(example: Example) -> frozenset[str]:
    return frozenset().union(*(step.options for step in _chain(example)))


def _sandbox(tmp_path: Path, data: bool) -> Path:
    """A folder laid out like a clone's root, beside ``../shared/data`` when the example reads the real data."""
    clone = tmp_path / "clone"
    clone.mkdir(parents=True)
    shutil.copytree(ROOT / "submissions", clone / "submissions")
    (clone / "tests").mkdir()
    (clone / "tests" / "fixtures").symlink_to(ROOT / "tests" / "fixtures", target_is_directory=True)
    if data:
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED_DATA, target_is_directory=True)
    return clone


def _environment() -> dict[str, str]:
    """Offline, this environment's commands first on PATH, no data folder unless a block sets one."""
    base = {key: value for key, value in os.environ.items() if key != "SINKBENCH_DATA_DIR"}
    path = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    return {**base, "PATH": path, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "COLUMNS": "120"}


def _matches(expected: str, output: str) -> bool:
    """Whether the expected lines appear in ``output`` in order (``...`` matches any run of lines)."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"[ \t]*\n"
        for line in expected.splitlines()
    )
    text = output if output.endswith("\n") else output + "\n"
    return re.search(f"^{pattern}", text, flags=re.MULTILINE) is not None


def _run(block: Block, cwd: Path, where: str) -> None:
    command = ["bash", "-eo", "pipefail", "-c", block.code] if block.language == "bash" else [sys.executable]
    done = subprocess.run(
        command, input=None if block.language == "bash" else block.code, cwd=cwd, env=_environment(),
        capture_output=True, text=True, timeout=BLOCK_TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, f"{where} exited {done.returncode}:\n{block.code}\n{done.stderr[-3000:]}"
    if block.expected is not None:
        assert _matches(block.expected, done.stdout), (
            f"{where} printed:\n{done.stdout}\nexpected:\n{block.expected}"
        )


def _run_section(example: Example, root: Path) -> None:
    for number, block in enumerate(example.blocks, 1):
        _run(block, root / "clone", f"{example.id}, block {number}")


@pytest.fixture(scope="session")
def made(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Example, bool], Path]:
    """Runs a section (after what it needs) once per session; returns the folder holding what it made."""
    folders: dict[tuple[str, bool], Path] = {}

    def make(example: Example, data: bool) -> Path:
        if (example.id, data) not in folders:
            root = tmp_path_factory.mktemp("guide")
            _prepare(root, example, data, make)
            _run_section(example, root)
            folders[example.id, data] = root
        return folders[example.id, data]

    return make


def _prepare(root: Path, example: Example, data: bool, make: Callable[[Example, bool], Path]) -> None:
    """A sandbox in ``root``: fresh, or a copy of what the section named by ``after=`` made."""
    if example.after is None:
        _sandbox(root, data)
    else:
        assert example.after in EXAMPLES, f"{example.id}: after={example.after} names no section with code"
        shutil.copytree(make(EXAMPLES[example.after], data), root, symlinks=True, dirs_exist_ok=True)


@pytest.mark.slow  # the guide's commands, each in a fresh interpreter
@pytest.mark.timeout(3 * BLOCK_TIMEOUT)
@pytest.mark.parametrize("example", EXAMPLES.values(), ids=EXAMPLES)
def test_a_guide_example_runs_as_written(
    example: Example, tmp_path: Path, made: Callable[[Example, bool], Path]
) -> None:
    if "install" in example.options:
        readme = {line for block in FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8")) for line in
                  block[1].splitlines() if block[0] == "bash"}  # fmt: skip
        assert [
            line for block in example.blocks for line in block.code.splitlines() if line not in readme
        ] == []
        return
    data = "data" in _needs(example)
    if data and not (SHARED_DATA / "ifeval_input_data.jsonl").is_file():
        pytest.skip(f"needs the real evaluation files in {SHARED_DATA} (absent here)")
    _prepare(tmp_path, example, data, made)
    _run_section(example, tmp_path)


def test_every_guide_page_is_in_the_site_navigation_and_none_is_excluded() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    (guide,) = [item["Guide"] for item in config["nav"] if isinstance(item, dict) and "Guide" in item]

    def files(items: list) -> set[str]:
        found = set()
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            found |= files(value) if isinstance(value, list) else {value}
        return found

    assert {f"guide/{page.name}" for page in PAGES} <= files(guide)
    excluded = config.get("exclude_docs", "")
    assert "guide" not in excluded, excluded


def test_every_guide_page_has_an_example_and_no_remote_asset() -> None:
    pages = {example.page for example in EXAMPLES.values()}
    assert pages == {page.name for page in PAGES}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"!\[[^\]]*\]\(https?:|<(?:img|script|link)[^>]+(?:src|href)=\"https?:", text), (
            page
        )


def test_an_expected_output_is_compared_line_by_line() -> None:
    assert _matches("a\n...\nc", "a\nb\nb\nc\n") and not _matches("a\nc", "a\nb\nc\n")
    assert _matches("S = +1.456", "x\nS = +1.456   \n") and not _matches("S = +1.4", "S = +1.456\n")
    assert not _matches("S = +1.456", "xS = +1.456\n")


def _resolve(name: str) -> object:
    """The object a dotted name names: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for index in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:index]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[index:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(name)


def test_every_library_name_the_guide_gives_exists() -> None:
    names = {
        name for page in PAGES for name in re.findall(r"`(sinkbench(?:\.\w+)+)", page.read_text("utf-8"))
    }
    assert len(names) >= 10
    for name in sorted(names):
        assert _resolve(name) is not None, name
