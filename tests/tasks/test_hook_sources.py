"""The tasks' hook functions are part of the results file format: lm-eval records the source text of every function a
task's YAML names (``!function``) in the results file's ``configs``, and the submission gate refuses a pair whose two
sides' task configs differ (``rule_pair_settings_match``). A hook whose text changes, even a docstring, splits runs
made before the change from runs made after it."""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harness_tasks"
SUBMISSIONS = REPO / "submissions"


@functools.cache
def _hooks(folder: Path) -> dict[str, str]:
    """The functions the task YAMLs of ``folder`` name, by name: their source text as ``inspect.getsource`` gives it
    (read with :mod:`ast`, so the test imports neither lm-eval nor torch)."""
    hooks: dict[str, str] = {}
    for config in sorted(folder.glob("*.yaml")):
        for module, name in re.findall(r"!function (\w+)\.(\w+)", config.read_text(encoding="utf-8")):
            code = (folder / f"{module}.py").read_text(encoding="utf-8")
            for node in ast.parse(code).body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    hooks[name] = "\n".join(code.splitlines()[node.lineno - 1 : node.end_lineno])
    return hooks


def _recorded_hooks(results: dict) -> list[tuple[str, str, str]]:
    """``(task, hook name, recorded text)`` of every function source a results file's task configs hold."""
    found = []
    for task, config in results.get("configs", {}).items():
        texts = [config.get(key) for key in ("process_results", "process_docs")]
        texts += [metric.get("aggregation") for metric in config.get("metric_list") or []]
        for text in texts:
            if isinstance(text, str) and (match := re.match(r"def (\w+)\(", text)):
                found.append((task, match.group(1), text))
    return found


def test_every_recorded_hook_is_the_current_hook_word_for_word() -> None:
    checked = 0
    for path in sorted(SUBMISSIONS.rglob("results_*.json")):
        for task, name, text in _recorded_hooks(json.loads(path.read_text(encoding="utf-8"))):
            hook = _hooks(HARNESS / task).get(name) if (HARNESS / task).is_dir() else None
            if hook is None:
                continue  # a task or hook of lm-eval's own
            assert text.strip() == hook.strip(), (
                f"{path.relative_to(REPO)}: {task}'s {name} was recorded with another text than the current "
                f"hook's; restore the hook's text (docstring included), or new runs no longer pair with this one"
            )
            checked += 1
    assert checked >= 20, f"only {checked} recorded hooks of sinkbench's tasks found in submissions/"
