"""Time what each piece of the site build's speed machinery saves.

One synthetic board (``bench_site.py``'s) is built with the piece and without it, alternating, ``--repeat`` builds
of each; prints the medians, ranges and the share of the build's wall time the piece saves (a piece that saves less
than 5% at 1,000 entries does not pay for its code). Each piece is switched off by replacing a name for the build;
without it the site comes out the same byte for byte (``tests/leaderboard/test_site_project.py``; without
``raw_blocks``, the same HTML with other line breaks):

* ``shared_partials``: the theme's parts shared by many pages rendered once per folder;
* ``raw_blocks``: the templates' HTML blocks kept out of Markdown;
* ``gc_threshold``: the cyclic garbage collector run less often during the build;
* ``chart_process``: the charts' SVGs (and the chart script) made in a second process while the build goes on.

Every chart is rendered (an empty chart cache) unless ``--warm``: a rebuild of an unchanged board, its charts kept by
the first build, where the build's own work is all the wall time (the chart drawing no longer hides it). Run (the
first build, not timed, warms the caches):

    python benchmarks/bench_machinery.py [--entries 1000] [--repeat 3] [--pieces raw_blocks gc_threshold] [--warm]
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
from pathlib import Path

import pytest
from bench_site import EXPERIMENTS, board_like

from sinkbench import charts
from sinkbench.cli.parser import CommandParser
from sinkbench.leaderboard import generate, project, raw_blocks, shared_partials

#: Each piece, as the (module, name, replacement) that switch it off.
PIECES: dict[str, list[tuple[object, str, object]]] = {
    "shared_partials": [(shared_partials, "share_partials", lambda env: None)],
    "raw_blocks": [
        (raw_blocks, "lift", lambda markdown: (markdown, [])),
        (raw_blocks, "restore", lambda html, blocks: html),
    ],
    "gc_threshold": [(project, "fewer_collections", contextlib.nullcontext)],
    "chart_process": [
        (generate, "start_process", lambda: None),
        (charts.Rendering, "MIN_FOR_PROCESS", float("inf")),
    ],
}


def build_seconds(root: Path, out: Path, without: str | None = None, cache: Path | None = None) -> float:
    """Wall seconds of one whole build of ``root`` into ``out``, with every piece but ``without``; the charts
    taken from ``cache`` where it holds them (None: an empty cache, every chart rendered)."""
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory(dir=out.parent) as empty:
        for module, name, replacement in PIECES.get(without or "", []):
            patch.setattr(module, name, replacement)
        report = project.build_site(root, out, experiments_dir=EXPERIMENTS, chart_cache=cache or Path(empty))
        return report.timings["total"]


def main() -> None:
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000, help="entries of the synthetic board")
    parser.add_argument("--repeat", type=int, default=3, help="builds with and builds without each piece")
    parser.add_argument(
        "--pieces",
        nargs="+",
        choices=sorted(PIECES),
        default=list(PIECES),
        metavar="PIECE",
        help=f"pieces to time, of: {', '.join(PIECES)} (default: all)",
    )
    parser.add_argument(
        "--tmp", type=Path, help="folder the board and sites go under (default: the system's)"
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="time rebuilds whose charts the first build kept (default: every chart rendered in each build)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
        root = Path(folder) / "submissions"
        board_like(root, args.entries, profiles=0.3)
        cache = Path(folder) / "chart-cache" if args.warm else None
        build_seconds(root, Path(folder) / "warm-up", cache=cache)
        for piece in args.pieces:
            timed: dict[str, list[float]] = {"with": [], "without": []}
            for _ in range(args.repeat):
                timed["with"].append(build_seconds(root, Path(folder) / "with", cache=cache))
                timed["without"].append(build_seconds(root, Path(folder) / "without", piece, cache))
            medians = {side: statistics.median(seconds) for side, seconds in timed.items()}
            ranges = {side: f"{min(seconds):.2f} to {max(seconds):.2f}" for side, seconds in timed.items()}
            saved = 100 * (medians["without"] - medians["with"]) / medians["without"]
            print(
                f"{piece:16} with {medians['with']:6.2f} s ({ranges['with']}), without {medians['without']:6.2f} s "
                f"({ranges['without']}): saves {saved:+.1f}%",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
