"""Running sinkbench's command line in a test."""

from __future__ import annotations

import pytest


def help_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """What ``sinkbench ARGV`` (a ``--help``) prints, its white space folded; fails unless it exits with 0."""
    from sinkbench.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0, argv
    return " ".join(capsys.readouterr().out.split())
