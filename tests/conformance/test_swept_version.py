"""transformers is a range in pyproject.toml; the architecture table holds for the one release it was swept on,
which the table, its page and CI's constraint all name, and a probe or extraction on another release says so in
one line, once."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from sinkbench.conformance import table

ROOT = Path(__file__).resolve().parents[2]
SWEPT = table.load()["transformers"]


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch):
    """Pretend the installed transformers is a given release (and forget whether the warning was printed)."""
    version = importlib.metadata.version

    def pretend(release: str) -> None:
        monkeypatch.setattr(
            importlib.metadata,
            "version",
            lambda name: release if name == "transformers" else version(name),
        )

    table.warn_if_not_swept_version.cache_clear()
    yield pretend
    table.warn_if_not_swept_version.cache_clear()


def test_another_release_is_one_line_once(running, capsys: pytest.CaptureFixture[str]) -> None:
    running("5.25.0")
    table.warn_if_not_swept_version()
    table.warn_if_not_swept_version()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err == table.version_line(SWEPT, "5.25.0") + "\n"
    assert f"swept on transformers {SWEPT} and this is transformers 5.25.0" in err


def test_the_swept_release_is_silent(running, capsys: pytest.CaptureFixture[str]) -> None:
    running(SWEPT)
    table.warn_if_not_swept_version()
    assert capsys.readouterr().err == ""
    assert table.version_line("5.24.0", "5.24.1") is not None  # a patch release too: an attention may change


def test_the_probe_says_it(running, capsys: pytest.CaptureFixture[str]) -> None:
    """Every probe (screen, heads, margin, the monitor, lm-eval's sink_strength) routes attention through
    :func:`register_probe_attention`."""
    from sinkbench.sink.attention import register_probe_attention

    running("5.99.0")
    register_probe_attention()
    assert capsys.readouterr().err == table.version_line(SWEPT, "5.99.0") + "\n"


def test_table_page_ci_and_pyproject_name_the_same_release() -> None:
    page = (ROOT / "site" / "docs" / "architectures.md").read_text(encoding="utf-8")
    assert f"with transformers {SWEPT};" in page
    constraints = (ROOT / ".ci" / "constraints.txt").read_text(encoding="utf-8")
    assert re.findall(r"^transformers==(\S+)$", constraints, flags=re.MULTILINE) == [SWEPT]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (line,) = re.findall(r'^\s*"(transformers[^"]*)",', pyproject, flags=re.MULTILINE)
    allowed = Requirement(line).specifier
    assert SWEPT in allowed and "5.25.0" in allowed  # a range, not one release
