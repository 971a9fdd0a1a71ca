"""The two areas of the repository and the one direction of their imports: ``experiments/`` (what produced the
project's own evidence) imports ``sinkbench`` (the product), never the reverse."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (anywhere in it, not only at the top)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_of_sinkbench_imports_the_experiments() -> None:
    modules = sorted((ROOT / "sinkbench").rglob("*.py"))
    assert len(modules) > 50
    offending = [path.relative_to(ROOT).as_posix() for path in modules if "experiments" in _imported(path)]
    assert offending == [], f"sinkbench must not import experiments: {offending}"


def test_the_check_sees_an_import_of_the_experiments(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from experiments.vl_testbed import page\n", encoding="utf-8")
    assert "experiments" in _imported(module)


def test_the_experiments_use_sinkbench_and_each_has_its_readme() -> None:
    folders = sorted(path.parent for path in (ROOT / "experiments").glob("*/README.md"))
    assert [folder.name for folder in folders] == ["interventions_pair", "prompt_sets", "vl_testbed"]
    for folder in folders:
        assert any("sinkbench" in _imported(path) for path in folder.glob("*.py")), folder.name
