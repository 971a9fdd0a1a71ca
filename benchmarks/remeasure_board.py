"""Re-measure S of every reference LLM and backbone on the board under sinkbench's own protocol, and submit them.

The board's S values of published pairs are the paper's (arXiv 2609.00746), measured on its 15 prompts, which are
not public, so a backbone screened with sinkbench is "measured by another protocol". For a machine with Hub access and
a GPU: for each LLM this runs lm-eval's ``sink_strength`` task on the Hub checkpoint with both packaged calibration
sets (``v1``, the board's, and ``v2``, the robustness check) and submits the ``v1`` run as a measured backbone entry
(``sinkbench submit backbone``: gate-checked, local paths removed). Every fit, prediction and placement then uses
that S (``sinkbench.tables.pairs.s_used``) and says so (``s_source``). The ``v2`` runs stay in the runs folder and
its summary (``remeasure.json``): the gate keeps one S per model and revision.

Resumable: a model whose runs exist is not run again. Run from a clone:

    python benchmarks/remeasure_board.py --device cuda:0 --dtype bfloat16 --runs runs/remeasure
    python benchmarks/remeasure_board.py --dry-run          # the plan and its expected time only

``--stand-in ID=DIR`` measures a local folder in place of a Hub id (the test runs tiny random models so).
Not yet run on the board's real models: this machine has neither a GPU nor the Hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sinkbench.cli.parser import CommandParser
from sinkbench.leaderboard.entry_details import slugify
from sinkbench.safe_io import file_sha256
from sinkbench.sink.metrics import SINK_STRENGTH
from sinkbench.sink.prompts import DEFAULT_SET, PACKAGED_SETS
from sinkbench.submissions import load_valid_entries
from sinkbench.submissions.catalogue import SINK_METRIC, SINK_TASK
from sinkbench.submissions.facts import llm_size
from sinkbench.submissions.submit import submit_backbone
from sinkbench.tables.pairs import remeasured

#: Assumed for the expected time (stated, not measured here): download rate, and the time to load a checkpoint
#: onto the GPU and probe its 15 prompts twice, per billion parameters, on one H100-class GPU.
DOWNLOAD_MB_PER_S = 100.0
SECONDS_PER_BILLION = 8.0
#: Bytes per parameter of a bfloat16 checkpoint.
BYTES_PER_PARAMETER = 2


@dataclass(frozen=True)
class BoardLlm:
    """One LLM of the board to re-measure: its Hub id, the revision the board records (None: not recorded), the
    QK-norm class and display name its entries give, and its size in billions (None: unknown)."""

    model_id: str
    revision: str | None
    qk_norm: str
    display_name: str
    params_b: float | None

    @property
    def slug(self) -> str:
        """The model's folder and entry name part: ``org--name``."""
        return slugify(self.model_id)


@dataclass
class Measured:
    """What one model's re-measurement gave: S and its standard error per calibration set, the entry written."""

    model_id: str
    runs: dict[str, str] = field(default_factory=dict)
    sink_strength: dict[str, float] = field(default_factory=dict)
    stderr: dict[str, float | None] = field(default_factory=dict)
    entry: str | None = None


def board_llms(submissions: Path, *, include_remeasured: bool = False) -> list[BoardLlm]:
    """Every reference LLM and backbone on the board, by Hub id; those that already have a measured backbone entry
    on the default calibration set are left out unless ``include_remeasured``."""
    entries = load_valid_entries(submissions)
    done = set() if include_remeasured else set(remeasured(entries))
    found: dict[str, BoardLlm] = {}
    for entry in entries:
        if entry.testbed or entry.llm.id in done or entry.llm.id in found:
            continue
        size = llm_size(entry)
        found[entry.llm.id] = BoardLlm(
            entry.llm.id,
            entry.llm.revision,
            entry.metadata.qk_norm,
            entry.llm.display_name or entry.llm.id.rsplit("/", 1)[-1],
            size.billions if size else None,
        )
    return sorted(found.values(), key=lambda llm: llm.model_id)


def expected_time(llms: Sequence[BoardLlm]) -> str:
    """The plan's expected time from the models' sizes and the stated assumptions (unknown sizes counted as 8B)."""
    billions = sum(llm.params_b or 8.0 for llm in llms)
    download = billions * 1e9 * BYTES_PER_PARAMETER / (DOWNLOAD_MB_PER_S * 1e6)
    compute = billions * SECONDS_PER_BILLION
    return (
        f"{len(llms)} models, {billions:.0f}B parameters in all: about {download / 3600:.1f} h to download "
        f"{billions * BYTES_PER_PARAMETER:.0f} GB at {DOWNLOAD_MB_PER_S:.0f} MB/s, and about {compute / 60:.0f} min "
        f"to load and probe them twice on one H100-class GPU (an estimate, not measured: at "
        f"{SECONDS_PER_BILLION:.0f} s per billion parameters)"
    )


def _lm_eval(
    pretrained: str, revision: str | None, calibration: str, out: Path, device: str, dtype: str
) -> None:
    """One ``sink_strength`` run of lm-eval on one calibration set, into ``out``."""
    args = f"pretrained={pretrained},dtype={dtype}" + (f",revision={revision}" if revision else "")
    command = [
        sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", args, "--tasks", SINK_TASK,
        "--metadata", json.dumps({"calibration": calibration}), "--device", device, "--output_path", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"lm_eval failed on {pretrained} ({calibration}):\n{done.stderr[-4000:]}")


def _results(folder: Path) -> dict:
    found = sorted(folder.rglob("results_*.json"))
    if not found:
        raise SystemExit(f"{folder}: lm_eval wrote no results file; remove the folder and run again")
    return json.loads(found[-1].read_text(encoding="utf-8"))


def remeasure(
    llm: BoardLlm,
    runs: Path,
    *,
    out: Path,
    submitter: str,
    stand_in: Path | None = None,
    device: str = "cuda:0",
    dtype: str = "bfloat16",
) -> Measured:
    """Measure ``llm`` on every packaged calibration set (skipping runs already there) and submit the default set's
    run as the backbone entry ``<org--name>-sinkbench-v1`` in ``out``."""
    pretrained = str(stand_in) if stand_in else llm.model_id
    measured = Measured(llm.model_id)
    for calibration in PACKAGED_SETS:
        folder = runs / llm.slug / calibration
        if not any(folder.rglob("results_*.json")):
            _lm_eval(pretrained, None if stand_in else llm.revision, calibration, folder, device, dtype)
        metrics = _results(folder)["results"][SINK_TASK]
        measured.runs[calibration] = str(folder)
        measured.sink_strength[calibration] = float(metrics[SINK_METRIC])
        error = metrics.get(SINK_STRENGTH.stderr_key)
        measured.stderr[calibration] = float(error) if isinstance(error, (int, float)) else None
    name = f"{llm.slug}-sinkbench-{DEFAULT_SET}"[:80]
    weights = stand_in / "model.safetensors" if stand_in else None
    revision = f"sha256:{file_sha256(weights)}" if weights and weights.is_file() else llm.revision
    submitted = submit_backbone(
        runs / llm.slug / DEFAULT_SET,
        name=name,
        out=out,
        submitter=submitter,
        model_id=llm.model_id,
        revision=revision,
        qk_norm=llm.qk_norm,
        display_name=llm.display_name,
        force=True,
    )
    measured.entry = submitted.folder.name
    return measured


def _stand_ins(values: Sequence[str]) -> dict[str, Path]:
    found = {}
    for value in values:
        model_id, separator, folder = value.partition("=")
        if not separator or not model_id or not folder:
            raise SystemExit(f"--stand-in {value!r}: expected ID=DIR, e.g. Qwen/Qwen3-8B=runs/tiny-qwen3")
        found[model_id] = Path(folder)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = CommandParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--submissions", type=Path, default=Path("submissions"), help="the board (default: %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=None, help="where entries go (default: --submissions)")
    parser.add_argument(
        "--runs", type=Path, default=Path("runs/remeasure"), help="lm-eval output (default: %(default)s)"
    )
    parser.add_argument("--device", default="cuda:0", help="lm-eval --device (default: %(default)s)")
    parser.add_argument("--dtype", default="bfloat16", help="the checkpoint's dtype (default: %(default)s)")
    parser.add_argument("--submitter", default="sinkbench maintainers", help="(default: %(default)s)")
    parser.add_argument("--models", nargs="*", metavar="ID", help="only these Hub ids (default: every one)")
    parser.add_argument("--all", action="store_true", help="also models that already have a sinkbench S")
    parser.add_argument(
        "--stand-in", action="append", default=[], metavar="ID=DIR", help="measure DIR for ID"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan and its expected time only")
    args = parser.parse_args(argv)
    llms = [
        llm
        for llm in board_llms(args.submissions, include_remeasured=args.all)
        if not args.models or llm.model_id in args.models
    ]
    print(f"Plan: {expected_time(llms)}.")
    for llm in llms:
        print(f"  {llm.model_id} (revision {llm.revision or 'not recorded: the Hub main branch'})")
    if args.dry_run or not llms:
        return 0
    stand_ins = _stand_ins(args.stand_in)
    out = args.out or args.submissions
    results = []
    for index, llm in enumerate(llms, 1):
        print(f"[{index}/{len(llms)}] {llm.model_id}", flush=True)
        measured = remeasure(
            llm, args.runs, out=out, submitter=args.submitter, stand_in=stand_ins.get(llm.model_id),
            device=args.device, dtype=args.dtype,
        )  # fmt: skip
        print(
            f"  S v1 {measured.sink_strength['v1']:+.3f}, v2 {measured.sink_strength['v2']:+.3f} -> {measured.entry}"
        )
        results.append(asdict(measured))
    args.runs.mkdir(parents=True, exist_ok=True)
    (args.runs / "remeasure.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"Wrote {len(results)} entries into {out}; run `sinkbench validate {out}` and commit them.")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    sys.exit(main())
