"""The README's picture: the leaderboard's own IFEval scatter (S against the observed delta of every pair), drawn by
the site's chart code from the repository's ``submissions/``. ``tests/docs/test_readme.py`` redraws it and compares;
after the board changes, ``python tests/readme_picture.py`` writes it again."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Where the README (and the Guide's Getting started page) show it.
PICTURE = ROOT / "site" / "docs" / "assets" / "s-vs-ifeval-delta.svg"
#: The site's chart it is: the Correlations page's IFEval scatter.
SITE_CHART = "plots/scatter-ifeval_strict.svg"


def readme_picture(submissions: Path = ROOT / "submissions") -> str:
    """The SVG of the board's IFEval scatter, as the site build draws it."""
    from sinkbench.leaderboard.views import build_views
    from sinkbench.submissions import load_submissions
    from sinkbench.tables.build import build_tables

    views = build_views(build_tables(load_submissions(submissions).entries))
    (scatter,) = [plot for plot in views.scatters if plot.path == SITE_CHART]
    return scatter.chart.svg()


if __name__ == "__main__":
    PICTURE.write_text(readme_picture(), encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(ROOT)}")
