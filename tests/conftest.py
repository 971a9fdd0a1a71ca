"""Test-session settings: nothing reaches the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_configure(config):
    """Force Hugging Face libraries offline for the whole session."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def testbed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The VL testbed on a tiny Llama, run twice (the second run resumes): its results file and the log lines."""
    from tiny_models import run_tiny_testbed

    root = tmp_path_factory.mktemp("testbed")
    logged: list[str] = []
    results = run_tiny_testbed(root, logged.append)
    logged.append("-- rerun --")
    run_tiny_testbed(root, logged.append)
    return results, logged
