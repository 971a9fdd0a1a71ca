"""Test-session settings: nothing reaches the network."""

from __future__ import annotations

import os


def pytest_configure(config):
    """Force Hugging Face libraries offline for the whole session."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
