"""``sinkbench submit pair`` and ``sinkbench submit backbone``: an entry folder from lm-eval output folders."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sinkbench.cli.options import ENTRY_OUTPUT, keywords
from sinkbench.cli.parser import Argument, add_command, arg, group

if TYPE_CHECKING:
    from sinkbench.submissions.submit import Submitted

QK_CLASSES = ("per-head", "layerwise", "none")
#: The pull-request checklist of each kind of entry ({folder}: the entry folder, as the user can paste it).
CHECKLISTS = {
    kind: "\n".join(
        [
            "Pull-request checklist:",
            "  [ ] `sinkbench validate {folder}` passes (it did just now)",
            f"  [ ] the {revisions} in metadata.json {are} the weights you evaluated",
            *(["  [ ] both sides of the pair ran with the same flags (the gate compared what lm-eval recorded)"]
              if kind == "pair" else []),
            "  [ ] the redactions listed in metadata.json replaced only local paths",
        ]
    )
    for kind, revisions, are in (("pair", "revisions", "are"), ("backbone", "revision", "is"))
}  # fmt: skip


def register(subparsers: argparse._SubParsersAction) -> None:
    """Build a submission entry from lm-eval output folders (checked by the gate, local paths removed).

    Copy the results and samples files of `sinkbench eval ... --output_path RUN --log_samples` into a new entry
    under --out, fill metadata.json from what they record, replace local paths by the model id or <local>
    (listing each change in metadata.json), and write the entry only if `sinkbench validate` would accept it.
    """
    parser = add_command(subparsers, "submit", None, doc=register.__doc__)
    kinds = parser.add_subparsers(dest="submit_kind", metavar="KIND", required=True)
    common = group(
        arg("--name", help="entry folder name, e.g. qwen3-vl-8b-instruct", shown="none; required"),
        arg("--submitter", help="who submits the entry, a name or handle", shown="none; required"),
        arg("--profile", type=Path, metavar="FILE.json", shown="none",
            help="a `sinkbench screen --output` report of the LLM, for its heatmap"),
        arg("--qk-norm", choices=QK_CLASSES, help="QK-norm class, when the run's files cannot tell it",
            shown="read from config.json or the GGUF file"),
        ENTRY_OUTPUT,
    )  # fmt: skip
    add_command(
        kinds, "pair", _submit_pair,
        arg("--reference", required=True, type=Path, metavar="RUN_DIR", help="the reference LLM's run folder"),
        arg("--vlm", required=True, type=Path, metavar="RUN_DIR", help="the VLM-LM's run folder"),
        arg("--vl-recipe", help="the VL training between the two, e.g. 'SFT+DPO on ...'", shown="none; required"),
        arg("--testbed", action="store_true", shown="off",
            help="a pair made by sinkbench's VL testbed: shown apart, left out of the fits, ifeval_strict only "
            "and --limit allowed"),
        _model_options("reference", "the reference LLM"),
        _model_options("vlm", "the VLM (an extracted VLM-LM's provenance.json names it)"),
        common,
    )  # fmt: skip
    add_command(
        kinds, "backbone", _submit_backbone,
        arg("run", type=Path, metavar="RUN_DIR", help="the LLM's run folder (with sink_strength)"),
        _model_options("model", "the LLM"),
        arg("--display-name", help="name shown on the board", shown="the model id"),
        common,
    )  # fmt: skip


def _model_options(option: str, what: str) -> Argument:
    return group(
        arg(f"--{option}-id", metavar="ORG/NAME", help=f"Hub id of {what}; needed when its run used a local folder",
            shown="read from the run, an extracted VLM-LM's provenance.json, a Hub-cache snapshot folder, or the "
            "embedded model of sinkbench's GGUF cache folder"),
        arg(f"--{option}-revision", metavar="REV",
            help=f"revision of {what}: a commit, or sha256:HEX of a weights file, the model.sha256 of `sinkbench "
            "screen --output`",
            shown="read from the run, a Hub-cache snapshot folder or sinkbench's GGUF cache folder"),
    )  # fmt: skip


def pasteable(path: Path) -> str:
    """``path`` as the user can paste it where they stand: relative to the current folder, quoted for the shell."""
    return shlex.quote(os.path.relpath(path))


def _report(submitted: Submitted, kind: str) -> None:
    folder = submitted.folder
    print(
        f"wrote {pasteable(folder)} ({len(submitted.files)} files, {submitted.redactions} field(s) redacted):"
    )
    for name in submitted.files:
        print(f"  {name}")
    print("\nNext:")
    print(f"  git checkout -b add-{folder.name}")
    print(f"  git add {pasteable(folder)}")
    print(f'  git commit -m "Add {folder.name}"')
    print("  git push, then open a pull request\n")
    print(CHECKLISTS[kind].format(folder=pasteable(folder)))


#: The options both kinds hand to the library as they are.
_COMMON = ("name", "out", "submitter", "profile", "qk_norm", "force")


def _submit(args: argparse.Namespace, action: Callable[[], Submitted]) -> int:
    from sinkbench.errors import printable
    from sinkbench.submissions.submit import MissingOptions

    try:
        submitted = action()
    except MissingOptions as error:  # a usage error: the command line lacks what the runs cannot say
        print(printable(f"sinkbench submit {args.submit_kind}: {error}"), file=sys.stderr)
        return 2
    _report(submitted, args.submit_kind)
    return 0


def _submit_pair(args: argparse.Namespace) -> int:
    """a VLM-LM run and its reference LLM's run

    The reference run must hold sink_strength and the strict suite (sinkbench_format), the VLM-LM run the strict
    suite, both with --log_samples and the same flags.
    """
    from sinkbench.submissions.submit import submit_pair

    names = ("vl_recipe", "reference_id", "reference_revision", "vlm_id", "vlm_revision", "testbed")
    return _submit(args, lambda: submit_pair(args.reference, args.vlm, **keywords(args, *_COMMON, *names)))


def _submit_backbone(args: argparse.Namespace) -> int:
    """one LLM's run with sink_strength

    The run must hold sink_strength; it may also hold the strict suite (a --limit run is labelled).
    """
    from sinkbench.submissions.submit import submit_backbone

    names = (*_COMMON, "model_id", "display_name")
    return _submit(
        args, lambda: submit_backbone(args.run, revision=args.model_revision, **keywords(args, *names))
    )
