"""The header every JSON report of sinkbench starts with: which sinkbench wrote it, and when."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sinkbench import __version__


def report_header() -> dict[str, Any]:
    """``sinkbench_version`` and ``created`` (UTC, ISO 8601, seconds) for the top of a report."""
    return {
        "sinkbench_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
