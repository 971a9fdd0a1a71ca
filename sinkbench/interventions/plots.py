"""Figures of the interventions' reports, as SVG text (matplotlib's object API, no pyplot; needs the ``site`` or
``dev`` extra, which bring matplotlib)."""

from __future__ import annotations

import io
from typing import Any

from sinkbench.errors import UserError

_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "sinkbench",
    "font.size": 8,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e0e0e0",
}
#: Endpoint and versus colours (Okabe-Ito: colour-blind safe).
_COLOURS = ("#D55E00", "#0072B2")


def displacement_svg(report: dict[str, Any]) -> str:
    """One panel per projection: ||dW||_2 per decoder layer (log scale) for the endpoint and, when the report has
    one, the second endpoint; the summarised window is shaded.

    Raises:
        UserError: matplotlib is not installed.
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.ticker import NullFormatter
    except ImportError as error:
        raise UserError(f"--plot needs matplotlib: pip install 'sinkbench[site]' ({error})") from error
    series = {"endpoint": report["rows"], "versus": report["versus_rows"] or []}
    kinds = list(dict.fromkeys(row["name"] for row in report["rows"] if row["operator_norm"] is not None))
    columns = min(4, len(kinds))
    rows_count = -(-len(kinds) // columns)
    window = report["window"]["layers"]
    with matplotlib.rc_context(_STYLE):
        figure = Figure(figsize=(2.6 * columns, 2.0 * rows_count + 0.4), layout="constrained")
        axes = figure.subplots(rows_count, columns, squeeze=False).flatten()
        for axis, name in zip(axes, kinds, strict=False):
            axis.axvspan(window[0] - 0.5, window[-1] + 0.5, color="#f2f2f2", zorder=0)
            for colour, (role, rows) in zip(_COLOURS, series.items(), strict=True):
                points = [(row["layer"], row["operator_norm"]) for row in rows if row["name"] == name]
                if points and any(value > 0 for _, value in points):
                    label = report["models"][role]["id"] if role in report["models"] else role
                    axis.plot(*zip(*points, strict=True), marker=".", color=colour, label=label, linewidth=1)
            axis.set_yscale("log")
            axis.yaxis.set_minor_formatter(
                NullFormatter()
            )  # a label on every minor tick crowds a narrow panel
            axis.set_title(name.removesuffix(".weight"), fontsize=8)
            axis.set_xlabel("decoder layer")
        for axis in axes[len(kinds) :]:
            axis.set_visible(False)
        axes[0].set_ylabel("||dW||_2")
        handles, labels = axes[0].get_legend_handles_labels()
        if handles:
            figure.legend(handles, [_plain(label) for label in labels], loc="outside upper center", ncols=2)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def _plain(text: str) -> str:
    """User text drawn literally, not parsed as mathtext."""
    return text.replace("$", r"\$")
