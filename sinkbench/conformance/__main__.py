"""``python -m sinkbench.conformance``: run both sweeps and print, or ``--write`` the architecture tables."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence

from sinkbench.cli.parser import CommandParser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sweeps; with ``--write`` replace the committed JSON and page, else print the summary lines."""
    parser = CommandParser(prog="python -m sinkbench.conformance", description=__doc__)
    choice = parser.add_mutually_exclusive_group()  # --write records the full sweep only
    choice.add_argument(
        "--write",
        action="store_true",
        help="replace sinkbench/conformance/architectures.json and the site's architectures page "
        "(default: print the summary only)",
    )
    choice.add_argument(
        "--types",
        nargs="*",
        metavar="TYPE",
        help="check only these model types, and print them (default: all; not with --write)",
    )
    args = parser.parse_args(argv)
    document, seconds = run(args.types)
    from sinkbench.conformance.table import TABLE_JSON, TABLE_PAGE, summary, to_markdown
    from sinkbench.safe_io import write_json_atomic, write_text_atomic

    sections = {section: document[section] for section in ("probe", "extract")}
    for section, rows in sections.items():
        print(f"{section}: {summary(rows)}")
    print(f"{sum(map(len, sections.values()))} model types in {seconds:.0f} s")
    if args.types:
        print(json.dumps(sections, indent=2))
    elif args.write:
        write_json_atomic(document, TABLE_JSON)
        write_text_atomic(TABLE_PAGE, to_markdown(document))
        print(f"wrote {TABLE_JSON} and {TABLE_PAGE}")
    return 0


def run(types: Sequence[str] | None = None) -> tuple[dict, float]:
    """Both sweeps (only ``types`` where given) as the JSON document, and their time in seconds."""
    import torch
    import transformers
    from transformers.utils import logging

    from sinkbench.conformance import extract, probe
    from sinkbench.conformance.table import to_json
    from sinkbench.extract import vlm_model_types

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads only wait for each other (20x slower on a busy machine)
    started = time.perf_counter()
    try:
        causal = [t for t in probe.causal_lm_types() if not types or t in types]
        vlms = [t for t in vlm_model_types() if not types or t in types]
        results = {"probe": probe.sweep(causal), "extract": extract.sweep(vlms)}
    finally:
        torch.set_num_threads(threads)
    return to_json(transformers.__version__, results), time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
