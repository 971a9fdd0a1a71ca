"""The one declaration of S's metrics (sinkbench.sink.metrics) is the only one: the task YAML agrees with it,
and no other module of the package or the task folder spells a metric name or key as a literal."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from sinkbench.sink import metrics

ROOT = Path(__file__).resolve().parents[2]
TASK_YAML = ROOT / "harness_tasks" / "sink_strength" / "sink_strength.yaml"
SPEC_MODULE = ROOT / "sinkbench" / "sink" / "metrics.py"


class _IgnoreTags(yaml.SafeLoader):
    """Reads lm-eval task YAML without resolving its ``!function`` tags."""


_IgnoreTags.add_multi_constructor("!", lambda loader, suffix, node: None)


def test_task_yaml_metric_list_matches_the_spec() -> None:
    config = yaml.load(TASK_YAML.read_text(encoding="utf-8"), Loader=_IgnoreTags)
    declared = [(item["metric"], item["higher_is_better"]) for item in config["metric_list"]]
    assert declared == [(metric.name, metric.higher_is_better) for metric in metrics.SINK_METRICS]
    assert config["task"] == metrics.SINK_TASK


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string constant of a module except docstrings, with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_metric_names_are_spelled_only_in_the_spec() -> None:
    names = {metric.name for metric in metrics.SINK_METRICS} - {metrics.SINK_TASK}
    keys = {metric.results_key for metric in metrics.SINK_METRICS}
    modules = [*sorted((ROOT / "sinkbench").rglob("*.py")), *sorted((ROOT / "harness_tasks").rglob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in modules
        if path != SPEC_MODULE
        for line, value in _string_literals(path)
        if value in names or value in keys or any(key in value for key in keys)
    ]
    assert not found, "metric names outside sinkbench/sink/metrics.py:\n" + "\n".join(found)


def test_names_follow_the_thresholds() -> None:
    assert metrics.SHARE_G_ABOVE.name == f"share_g_above_{metrics.G_THRESHOLD:g}"
    assert metrics.SINK_RATE.name == f"sink_rate_{metrics.SINK_RATE_THRESHOLD:g}"
    assert metrics.OBSERVATIONS.higher_is_better is None  # a count is not a score
