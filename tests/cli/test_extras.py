"""The base install (no extras) runs every command, or says in one line which extra a command needs.

A package of an extra is made unimportable in a child process (``sys.modules[name] = None``, what Python does for
a module that cannot be imported), so the command meets it as a base install without that extra would.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from sinkbench.cli.extras import EXTRA_MODULES, EXTRA_OF_MODULE, run_needing_extras

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"


def _without(modules: list[str], argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``sinkbench ARGV`` in a child process where ``modules`` cannot be imported."""
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from sinkbench.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # a fresh interpreter
@pytest.mark.parametrize("module", EXTRA_MODULES["site"])
@pytest.mark.parametrize("action", ["build", "serve"])
def test_site_without_the_site_extra_names_it_in_one_line(module: str, action: str, tmp_path: Path) -> None:
    out = tmp_path / "site"
    argv = ["site", action, "--submissions", str(FIXTURES)] + (
        ["--out", str(out)] if action == "build" else []
    )
    done = _without([module], argv, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f'sinkbench site {action} needs the site extra: pip install "sinkbench[site]"\n'
    assert done.stdout == "" and sorted(tmp_path.iterdir()) == []  # refused before anything was written


@pytest.mark.slow  # a fresh interpreter
def test_help_needs_no_extra(tmp_path: Path) -> None:
    """``--help`` of every command imports none of the extras' packages."""
    modules = list(EXTRA_OF_MODULE)
    done = _without(modules, ["--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    commands = re.findall(r"^    ([a-z][a-z-]+) ", done.stdout, flags=re.MULTILINE)
    assert "site" in commands and "merge" in commands, done.stdout
    for command in commands:
        done = _without(modules, [command, "--help"], tmp_path)
        assert done.returncode == 0 and done.stdout.startswith("usage: sinkbench"), (command, done.stderr)


@pytest.mark.parametrize("missing", ["vl_convert", "mergekit.merge_methods", "mkdocs.config"])
def test_a_package_of_an_extra_met_inside_a_command_is_one_line_and_exit_2(
    missing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever command reaches a package of an extra (the check of :func:`require_extra` aside)."""

    def handler() -> int:
        raise ModuleNotFoundError(f"No module named {missing!r}", name=missing)

    assert run_needing_extras("aggregate", handler) == 2
    extra = EXTRA_OF_MODULE[missing.partition(".")[0]]
    assert capsys.readouterr().err == (
        f'sinkbench aggregate needs the {extra} extra: pip install "sinkbench[{extra}]"\n'
    )


def test_a_module_of_no_extra_keeps_its_error() -> None:
    """A missing module no extra installs is a broken install (or a bug): not blamed on an extra."""

    def handler() -> int:
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    with pytest.raises(ModuleNotFoundError, match="torch"):
        run_needing_extras("screen", handler)


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_extras_modules_are_the_packages_pyproject_lists() -> None:
    """Each extra's import names come from a package of that extra in pyproject.toml (or one it requires), and
    every package of the extra has one of its import names listed, so a package added to an extra is named too."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    provided = importlib.metadata.packages_distributions()
    for extra, modules in EXTRA_MODULES.items():
        listed = {_requirement_name(requirement) for requirement in extras[extra]}
        for name in listed:
            try:
                importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                pytest.skip(f"the {extra} extra is not installed (it is in the dev install)")
        required = {
            _requirement_name(requirement)
            for name in listed
            for requirement in importlib.metadata.requires(name) or []
            if "extra ==" not in requirement
        }
        for module in modules:
            distributions = {name.lower().replace("_", "-") for name in provided.get(module, [])}
            assert distributions & (listed | required), (extra, module, distributions)
        for name in listed:
            imports = {module for module, names in provided.items() if name in {n.lower() for n in names}}
            assert imports & set(modules), f"{extra} extra: none of {name}'s modules {imports} is listed"
