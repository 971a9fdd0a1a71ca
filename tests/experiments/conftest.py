"""Fixtures of the experiments' tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def testbed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The VL testbed on a tiny Llama, run twice (the second run resumes): its results file and the log lines."""
    from tiny_testbed import run_tiny_testbed

    root = tmp_path_factory.mktemp("testbed")
    logged: list[str] = []
    results = run_tiny_testbed(root, logged.append)
    logged.append("-- rerun --")
    run_tiny_testbed(root, logged.append)
    return results, logged
