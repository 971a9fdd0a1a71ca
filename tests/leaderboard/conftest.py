"""Fixtures the leaderboard's test modules share."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def real_board_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own board (``submissions/``) built once per session with the default sources and the whole
    configuration (the Guide's API page too); tests read it and never change it."""
    from sinkbench.leaderboard import project

    out = tmp_path_factory.mktemp("real-board") / "site"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(project, "_plugins", project._plugins.__wrapped__)
        project.build_site(ROOT / "submissions", out)
    return out
