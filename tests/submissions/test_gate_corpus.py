"""The gate's hostile corpus (issue 11): one row per hostile input, run through the real command line.

Each case copies the valid fixtures (``tests/fixtures/submissions``) into a temporary folder, applies one
mutation and runs one command (``validate``, ``aggregate``, ``site build`` or ``import-reported``). Every case
asserts the same contract: the exit status (1 refused, 2 usage), a message line naming the file (with the line,
for a CSV) and the field, no traceback, no raw control or bidirectional character in the terminal output, and
nothing changed on disk (the submissions tree and an earlier output, byte for byte, modes included).

Cases are grouped by the classes of issue 11 (``anchors`` ... ``publication``) and by what was refused before
it (``schema``, ``rules``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import stat
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sinkbench.cli import main
from sinkbench.publish import MARKER

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
PAIR = "submissions/pairs/tiny-vlm"
REF_SINK = f"{PAIR}/reference/results_2026-11-30T00-00-00.000000.json"
REF_STRICT = f"{PAIR}/reference/results_2026-11-30T00-10-00.000000.json"
REF_SAMPLES = f"{PAIR}/reference/samples_ifeval_strict_2026-11-30T00-10-00.000000.jsonl"
VLM_RESULTS = f"{PAIR}/vlm/results_2026-11-30T01-00-00.000000.json"
VLM_SAMPLES = f"{PAIR}/vlm/samples_ifeval_strict_2026-11-30T01-00-00.000000.jsonl"
PAIR_META = f"{PAIR}/metadata.json"
PROFILE = f"{PAIR}/sink_profile.json"
REPORTED = "submissions/pairs/tiny-vlm-reported/metadata.json"
BACKBONE = "submissions/backbones/tiny-llm"
BACKBONE_META = f"{BACKBONE}/metadata.json"
BACKBONE_SINK = f"{BACKBONE}/results_2026-11-30T02-00-00.000000.json"
BACKBONE_REPORTED = "submissions/backbones/tiny-llm-reported/metadata.json"
CSV_FILE = "x.csv"
CSV_HEADER = [
    "vlm",
    "reference_llm",
    "qk_norm",
    "sink_strength",
    "task",
    "delta",
    "reference_score",
    "vlm_score",
]
CSV_ROW = ["org/vlm-a", "org/llm-a", "none", "1.2", "ifeval_strict", "-3.0", "70.0", "67.0"]
SOURCE = "A. Author. Fixture. arXiv 0000.00000 (2026)."
#: Unicode categories that must never reach the terminal raw: control, format, separators, surrogates, private.
_RAW_FORBIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co"}
_IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Tree:
    """What a mutation works on: the temporary folder, the submissions copy in it, and pytest's monkeypatch."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch

    def __truediv__(self, relative: str) -> Path:
        return self.tmp / relative


Mutation = Callable[[Tree], None]


@dataclass(frozen=True)
class Case:
    """One hostile input: the class it belongs to, how to make it, the command, and what must be reported."""

    kind: str
    name: str
    mutate: Mutation
    file: str
    field: str
    command: str = "validate"
    code: int = 1
    says: str = ""
    args: tuple[str, ...] = ()


# --- mutations ---------------------------------------------------------------------------------------------


def _walk(data: Any, path: list[Any]) -> Any:
    for key in path:
        data = data[key]
    return data


def set_json(relative: str, path: list[Any], value: Any) -> Mutation:
    """Set ``path`` (keys and list indices) in a JSON file to ``value``."""

    def mutate(tree: Tree) -> None:
        data = json.loads((tree / relative).read_text(encoding="utf-8"))
        _walk(data, path[:-1])[path[-1]] = value
        (tree / relative).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    return mutate


def drop_json(relative: str, *paths: list[Any]) -> Mutation:
    """Delete each of ``paths`` from a JSON file."""

    def mutate(tree: Tree) -> None:
        data = json.loads((tree / relative).read_text(encoding="utf-8"))
        for path in paths:
            del _walk(data, path[:-1])[path[-1]]
        (tree / relative).write_text(json.dumps(data), encoding="utf-8")

    return mutate


def edit_json(relative: str, change: Callable[[Any], None]) -> Mutation:
    def mutate(tree: Tree) -> None:
        data = json.loads((tree / relative).read_text(encoding="utf-8"))
        change(data)
        (tree / relative).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    return mutate


def replace_text(relative: str, old: str, new: str) -> Mutation:
    """Replace the first ``old`` in a file's text by ``new`` (for what ``json.dumps`` cannot write)."""

    def mutate(tree: Tree) -> None:
        text = (tree / relative).read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {relative}"
        (tree / relative).write_text(text.replace(old, new, 1), encoding="utf-8")

    return mutate


def write(relative: str, content: str | bytes) -> Mutation:
    def mutate(tree: Tree) -> None:
        path = tree / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))

    return mutate


def edit_lines(relative: str, change: Callable[[list[dict]], list[dict]]) -> Mutation:
    def mutate(tree: Tree) -> None:
        lines = [json.loads(line) for line in (tree / relative).read_text(encoding="utf-8").splitlines()]
        (tree / relative).write_text("".join(json.dumps(line) + "\n" for line in change(lines)), "utf-8")

    return mutate


def rename(relative: str, name: str | bytes) -> Mutation:
    """Rename a file or folder inside its folder (``bytes`` for a name that is not UTF-8)."""

    def mutate(tree: Tree) -> None:
        source = tree / relative
        target = (
            os.path.join(os.fsencode(source.parent), name)
            if isinstance(name, bytes)
            else source.parent / name
        )
        os.rename(source, target)

    return mutate


def copy_entry(relative: str, name: str) -> Mutation:
    def mutate(tree: Tree) -> None:
        source = tree / relative
        shutil.copytree(source, source.parent / name, symlinks=True)

    return mutate


def hard_link(relative: str, content: str = '{"outside": true}\n') -> Mutation:
    """A hard link at ``relative`` to a file outside the tree."""

    def mutate(tree: Tree) -> None:
        outside = tree / "outside" / Path(relative).name
        outside.parent.mkdir(exist_ok=True)
        if (tree / relative).exists():
            shutil.copy(tree / relative, outside)
            (tree / relative).unlink()
        else:
            outside.write_text(content, encoding="utf-8")
        os.link(outside, tree / relative)

    return mutate


def symlink(relative: str, target: str) -> Mutation:
    """Replace ``relative`` by a symbolic link to ``target`` (relative to the temporary folder)."""

    def mutate(tree: Tree) -> None:
        path = tree / relative
        if path.is_dir() and not path.is_symlink():
            shutil.copytree(path, tree / "outside" / path.name)
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        os.symlink(tree / target, path)

    return mutate


def fifo(relative: str) -> Mutation:
    def mutate(tree: Tree) -> None:
        if (tree / relative).exists():
            (tree / relative).unlink()
        os.mkfifo(tree / relative)

    return mutate


def sparse(relative: str, size: int) -> Mutation:
    """A file of ``size`` bytes that takes no disk space (the gate must refuse it by its size alone)."""

    def mutate(tree: Tree) -> None:
        with (tree / relative).open("wb") as stream:
            stream.truncate(size)

    return mutate


def unreadable(relative: str) -> Mutation:
    """Make a file or folder unreadable: ``chmod 0``, or (as root, who reads anyway) a patched read or listing."""

    def mutate(tree: Tree) -> None:
        path = tree / relative
        if not _IS_ROOT:
            path.chmod(0)
            return
        denied = PermissionError(13, "Permission denied", str(path))
        for name in ("read_bytes", "open") if path.is_file() else ("iterdir",):
            tree.monkeypatch.setattr(Path, name, _refusing(getattr(Path, name), path, denied))

    return mutate


def _refusing(original: Callable[..., Any], path: Path, error: OSError) -> Callable[..., Any]:
    """``original`` (a method of Path), raising ``error`` for ``path``."""

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:
            raise error
        return original(self, *args, **kwargs)

    return refuse


def mkdir(relative: str) -> Mutation:
    return lambda tree: (tree / relative).mkdir(parents=True)


def remove(relative: str) -> Mutation:
    def mutate(tree: Tree) -> None:
        path = tree / relative
        shutil.rmtree(path) if path.is_dir() else path.unlink()

    return mutate


def both(*mutations: Mutation) -> Mutation:
    def mutate(tree: Tree) -> None:
        for mutation in mutations:
            mutation(tree)

    return mutate


def on_both_sides(change: Callable[[dict], None]) -> Mutation:
    return both(edit_json(REF_STRICT, change), edit_json(VLM_RESULTS, change))


def csv_rows(*rows: list[str], header: list[str] = CSV_HEADER) -> Mutation:
    """The CSV for ``import-reported``: ``header`` and ``rows``."""

    def mutate(tree: Tree) -> None:
        with (tree / CSV_FILE).open("w", newline="", encoding="utf-8") as stream:
            csv.writer(stream).writerows([header, *rows])

    return mutate


def csv_text(text: str | bytes) -> Mutation:
    return write(CSV_FILE, text)


def _row(**cells: str) -> list[str]:
    """:data:`CSV_ROW` with some cells replaced."""
    return [cells.get(column, value) for column, value in zip(CSV_HEADER, CSV_ROW, strict=True)]


def _task_item(**fields: Any) -> Callable[[dict], None]:
    return lambda data: data["reported"]["tasks"].append({"task": "eq_bench_strict", "table": "T", **fields})


def _deep(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _profile(layers: int, heads: int) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        data["layers_probed"] = list(range(layers))
        data["profile"] = {
            "layers": list(range(layers)),
            "median_g": [[1.0] * heads for _ in range(layers)],
            "layer_median_g": [1.0] * layers,
        }

    return change


def _drop_task_records(*blocks: str, task: str = "ifeval_strict") -> Callable[[dict], None]:
    def change(data: dict) -> None:
        for block in blocks:
            data[block].pop(task)

    return change


def _many_tasks(count: int, metrics: int) -> Callable[[dict], None]:
    """``count`` extra tasks of ``metrics`` metrics each, with every record lm-eval writes for a task."""

    def change(data: dict) -> None:
        for index in range(count):
            task = f"task{index}"
            data["results"][task] = {f"m{j},none": 0.5 for j in range(metrics)}
            data["configs"][task], data["versions"][task], data["n-shot"][task] = {}, 1.0, 0
            data["n-samples"][task] = {"original": 1, "effective": 1}

    return change


def _many_files(relative: str, count: int, size: int) -> Mutation:
    """``count`` samples files of another task (each ``size`` bytes, sparse) in the folder ``relative``."""

    def mutate(tree: Tree) -> None:
        for index in range(count):
            with (tree / relative / f"samples_boolq_{index:03d}.jsonl").open("wb") as stream:
                stream.truncate(size)

    return mutate


def _claim_group(data: dict) -> None:
    data["group_subtasks"]["ifeval_strict"] = ["ifeval_strict_part"]
    data["n-samples"].pop("ifeval_strict")


# --- the corpus --------------------------------------------------------------------------------------------

A, N, D, S, C, F, X, V, P = (
    "anchors",
    "numbers",
    "duplicates",
    "settings",
    "characters",
    "files",
    "amplification",
    "csv",
    "publication",
)
#: Holes whose fix lies outside the gate's files (see the module docstring).

CASES: list[Case] = [
    # 1. Anchors: every pattern is matched whole (a trailing newline is not the end of the text).
    Case(A, "entry name ending in a newline", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-x\n"),
         "submissions/pairs/tiny-vlm-x\n", "name"),
    Case(A, "entry name ending in a space", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-x "),
         "submissions/pairs/tiny-vlm-x ", "name"),
    Case(A, "entry name starting with a dash", copy_entry("submissions/pairs/tiny-vlm-reported", "-tiny"),
         "submissions/pairs/-tiny", "name"),
    Case(A, "entry name of 81 characters", copy_entry("submissions/pairs/tiny-vlm-reported", "a" * 81),
         "submissions/pairs/" + "a" * 81, "name"),
    Case(A, "newline entry name, aggregate", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-x\n"),
         "submissions/pairs/tiny-vlm-x\n", "name", command="aggregate"),
    Case(A, "newline entry name, site build", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-x\n"),
         "submissions/pairs/tiny-vlm-x\n", "name", command="site"),
    Case(A, "results file name ending in a newline", rename(VLM_RESULTS, Path(VLM_RESULTS).name + "\n"),
         VLM_RESULTS + "\n", "", says="not a file this layout expects"),
    Case(A, "samples file name ending in a newline", rename(VLM_SAMPLES, Path(VLM_SAMPLES).name + "\n"),
         VLM_SAMPLES + "\n", "", says="not a file this layout expects"),
    Case(A, "lm_eval_version with a script after it", set_json(VLM_RESULTS, ["lm_eval_version"], "0.4.13<script>x"),
         VLM_RESULTS, "lm_eval_version"),
    Case(A, "lm_eval_version ending in a newline", set_json(VLM_RESULTS, ["lm_eval_version"], "0.4.13\n"),
         VLM_RESULTS, "lm_eval_version"),
    Case(A, "model id ending in a newline", set_json(PAIR_META, ["vlm", "id"], "org/tiny-vlm\n"), PAIR_META,
         "vlm.id"),
    Case(A, "revision ending in a newline", set_json(PAIR_META, ["vlm", "revision"], "abc123\n"), PAIR_META,
         "vlm.revision"),
    Case(A, "link ending in a newline", set_json(PAIR_META, ["links"], ["https://example.org/x\n"]), PAIR_META,
         "links.0"),
    Case(A, "IFEval category ending in a newline",
         set_json(REPORTED, ["reported", "ifeval_regressions", "lost_by_category"], {"punctuation\n": 1}),
         REPORTED, "reported.ifeval_regressions.lost_by_category.punctuation\n"),
    Case(A, "task name ending in a newline", set_json(REPORTED, ["reported", "tasks", 1, "task"], "gsm8k_cot_strict\n"),
         REPORTED, "reported.tasks.1.task"),
    # 2. Numbers: JSON numbers are JSON numbers, finite, in range; CSV numbers are ASCII decimals.
    Case(N, "1e309 in a non-headline metric", replace_text(VLM_RESULTS, '"prompt_level_loose_acc,none": 0.375',
         '"prompt_level_loose_acc,none": 1e309'), VLM_RESULTS, "", says="overflows"),
    Case(N, "integer of 400 digits in a metric", replace_text(VLM_RESULTS, '"prompt_level_loose_acc,none": 0.375',
         '"prompt_level_loose_acc,none": 1' + "0" * 400), VLM_RESULTS, "", says="too large"),
    Case(N, "integer of 5000 digits", replace_text(REPORTED, '"n_prompts": 100', '"n_prompts": 1' + "0" * 5000),
         REPORTED, ""),
    Case(N, "-1e309 in the profile", replace_text(PROFILE, "1.1", "-1e309"), PROFILE, "", says="overflows"),
    Case(N, "1e308 in the profile", set_json(PROFILE, ["profile", "median_g", 0, 0], 1e308), PROFILE,
         "profile.median_g.0.0"),
    Case(N, "-1e308 in the profile", set_json(PROFILE, ["profile", "median_g", 1, 3], -1e308), PROFILE,
         "profile.median_g.1.3"),
    Case(N, "S of the profile out of range", set_json(PROFILE, ["sink_strength"], 1e300), PROFILE, "sink_strength"),
    Case(N, "negative probed layer", set_json(PROFILE, ["layers_probed", 0], -1), PROFILE, "layers_probed.0"),
    Case(N, "NaN in a results file", replace_text(REF_SINK, "1.25", "NaN"), REF_SINK, "", says="NaN"),
    Case(N, "Infinity in a results file", replace_text(VLM_RESULTS, "0.375", "Infinity"), VLM_RESULTS, "",
         says="Infinity"),
    Case(N, "-Infinity in a samples line", write(VLM_SAMPLES, '{"doc_id": -Infinity}\n'), VLM_SAMPLES, "line 1"),
    Case(N, "delta as a string", set_json(REPORTED, ["reported", "tasks", 0, "delta"], "-2.0"), REPORTED,
         "reported.tasks.0.delta"),
    Case(N, "n_prompts as a string", set_json(REPORTED, ["reported", "ifeval_regressions", "n_prompts"], "100"),
         REPORTED, "reported.ifeval_regressions.n_prompts"),
    Case(N, "n_prompts as a float", set_json(REPORTED, ["reported", "ifeval_regressions", "n_prompts"], 100.0),
         REPORTED, "reported.ifeval_regressions.n_prompts"),
    Case(N, "derived as a string", set_json(REPORTED, ["reported", "sink_strength", "derived"], "yes"), REPORTED,
         "reported.sink_strength.derived"),
    Case(N, "S as a boolean", set_json(REPORTED, ["reported", "sink_strength", "value"], True), REPORTED,
         "reported.sink_strength.value"),
    Case(N, "count as a boolean", set_json(REPORTED, ["reported", "ifeval_regressions", "lost"], True), REPORTED,
         "reported.ifeval_regressions.lost"),
    Case(N, "schema_version as a boolean", set_json(REPORTED, ["schema_version"], True), REPORTED,
         "schema_version"),
    Case(N, "schema_version as a string", set_json(REPORTED, ["schema_version"], "1"), REPORTED, "schema_version"),
    Case(N, "score above 100", set_json(REPORTED, ["reported", "tasks", 0, "vlm_score"], 100.5), REPORTED,
         "reported.tasks.0.vlm_score"),
    Case(N, "delta below -100", set_json(REPORTED, ["reported", "tasks", 1, "delta"], -100.01), REPORTED,
         "reported.tasks.1.delta"),
    Case(N, "reported S above 100 nats", set_json(BACKBONE_REPORTED, ["reported", "sink_strength", "value"], 100.5),
         BACKBONE_REPORTED, "reported.sink_strength.value"),
    Case(N, "negative count", set_json(REPORTED, ["reported", "ifeval_regressions", "gained"], -1), REPORTED,
         "reported.ifeval_regressions.gained"),
    Case(N, "n-samples as a string", set_json(VLM_RESULTS, ["n-samples", "ifeval_strict", "effective"], "8"),
         VLM_RESULTS, "n-samples.ifeval_strict.effective"),
    Case(N, "n-shot as a string", set_json(VLM_RESULTS, ["n-shot", "ifeval_strict"], "0"), VLM_RESULTS,
         "n-shot.ifeval_strict"),
    Case(N, "headline metric as a string", set_json(VLM_RESULTS, ["results", "ifeval_strict",
         "prompt_level_strict_acc,none"], "0.375"), VLM_RESULTS, "results.ifeval_strict.prompt_level_strict_acc"),
    Case(N, "headline metric as a boolean", set_json(VLM_RESULTS, ["results", "ifeval_strict",
         "prompt_level_strict_acc,none"], True), VLM_RESULTS, "results.ifeval_strict.prompt_level_strict_acc"),
    Case(N, "headline metric below 0", set_json(VLM_RESULTS, ["results", "gsm8k_cot_strict",
         "exact_match,flexible-extract"], -0.1), VLM_RESULTS, "results.gsm8k_cot_strict.exact_match"),
    Case(N, "secondary sink metric out of range", set_json(REF_SINK, ["results", "sink_strength",
         "position0_mass,none"], 1.5), REF_SINK, "results.sink_strength.position0_mass,none"),
    Case(N, "sample flag as an integer", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0],
         "prompt_level_strict_acc": 1}, *lines[1:]]), VLM_SAMPLES, "line 1: prompt_level_strict_acc"),
    Case(N, "doc_id as a string", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0], "doc_id": "0"},
         *lines[1:]]), VLM_SAMPLES, "line 1: doc_id"),
    Case(N, "negative parameter count", set_json(REF_STRICT, ["config", "model_num_parameters"], -1), REF_STRICT,
         "config.model_num_parameters"),
    Case(N, "Arabic-Indic digits in lm_eval_version", set_json(VLM_RESULTS, ["lm_eval_version"], "٠.٤.١٣"),
         VLM_RESULTS, "lm_eval_version"),
    Case(N, "float number in aggregate", set_json(REPORTED, ["reported", "tasks", 0, "delta"], "-2.0"), REPORTED,
         "reported.tasks.0.delta", command="aggregate"),
    Case(N, "Arabic-Indic digits in a CSV", csv_rows(_row(sink_strength="١.٥")), CSV_FILE, "line 2: sink_strength",
         command="import"),
    Case(N, "underscore in a CSV number", csv_rows(_row(delta="-1_0")), CSV_FILE, "line 2: delta", command="import"),
    Case(N, "full-width digits in a CSV", csv_rows(_row(reference_score="７０")), CSV_FILE,
         "line 2: reference_score", command="import"),
    Case(N, "1e999 in a CSV", csv_rows(_row(vlm_score="1e999")), CSV_FILE, "line 2: vlm_score", command="import"),
    Case(N, "nan in a CSV", csv_rows(CSV_ROW, _row(task="gsm8k_cot_strict", delta="nan", reference_score="",
         vlm_score="")), CSV_FILE, "line 3: delta", command="import"),
    Case(N, "hexadecimal in a CSV", csv_rows(_row(sink_strength="0x1")), CSV_FILE, "line 2: sink_strength",
         command="import"),
    Case(N, "score above 100 in a CSV", csv_rows(_row(reference_score="170.0", delta="-103.0")), CSV_FILE,
         "line 2: reference_score", command="import"),
    # 3. Duplicates: one model, one entry; one task, one number.
    Case(D, "same VLM at main and unrecorded", both(copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-z"),
         set_json("submissions/pairs/tiny-vlm-z/metadata.json", ["vlm", "revision"], "main")),
         "submissions/pairs/tiny-vlm-z/metadata.json", "vlm"),
    Case(D, "same VLM in another case", both(copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-z"),
         set_json("submissions/pairs/tiny-vlm-z/metadata.json", ["vlm", "id"], "SinkBench-Fixtures/Tiny-VLM-Published")),
         "submissions/pairs/tiny-vlm-z/metadata.json", "vlm"),
    Case(D, "same backbone, one unpinned", both(copy_entry(BACKBONE, "tiny-llm-z"),
         set_json("submissions/backbones/tiny-llm-z/metadata.json", ["provenance"], "reported"),
         lambda tree: [path.unlink() for path in (tree / "submissions/backbones/tiny-llm-z").glob("*.json")
                       if path.name != "metadata.json"],
         set_json("submissions/backbones/tiny-llm-z/metadata.json", ["model", "revision"], None),
         set_json("submissions/backbones/tiny-llm-z/metadata.json", ["citation"], {"source": "A paper"}),
         set_json("submissions/backbones/tiny-llm-z/metadata.json", ["reported"],
                  {"sink_strength": {"value": 1.0, "table": "T1"}})),
         "submissions/backbones/tiny-llm-z/metadata.json", "model"),
    Case(D, "same measured pair twice", copy_entry(PAIR, "tiny-vlm-again"),
         "submissions/pairs/tiny-vlm-again/metadata.json", "vlm"),
    Case(D, "same pair twice, aggregate", copy_entry(PAIR, "tiny-vlm-again"),
         "submissions/pairs/tiny-vlm-again/metadata.json", "vlm", command="aggregate"),
    Case(D, "same VLM at an abbreviated commit", both(copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-z"),
         set_json(REPORTED, ["vlm", "revision"], "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"),
         set_json("submissions/pairs/tiny-vlm-z/metadata.json", ["vlm", "revision"], "9a8b7c6")),
         "submissions/pairs/tiny-vlm-z/metadata.json", "vlm"),
    Case(D, "same VLM at an upper-case commit", both(copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-vlm-z"),
         set_json(REPORTED, ["vlm", "revision"], "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"),
         set_json("submissions/pairs/tiny-vlm-z/metadata.json", ["vlm", "revision"],
                  "9A8B7C6D5E4F3A2B1C0D9E8F7A6B5C4D3E2F1A0B")),
         "submissions/pairs/tiny-vlm-z/metadata.json", "vlm"),
    Case(D, "task listed twice in reported.tasks", edit_json(REPORTED, _task_item(task="gsm8k_cot_strict",
         delta=20.0)), REPORTED, "reported.tasks"),
    Case(D, "score listed twice in a backbone", edit_json(BACKBONE_REPORTED, lambda d: d["reported"]["scores"].append(
         {"task": "ifeval_strict", "score": 10.0, "table": "T"})), BACKBONE_REPORTED, "reported.scores"),
    Case(D, "duplicate JSON key", replace_text(REPORTED, '"delta": -2.0,', '"delta": -2.0, "delta": -8.9,'),
         REPORTED, "", says="duplicate key 'delta'"),
    Case(D, "task in two results files", edit_json(REF_SINK, lambda d: d["results"].update(
         gsm8k_cot_strict={"exact_match,flexible-extract": 0.5})), REF_STRICT, "results.gsm8k_cot_strict"),
    Case(D, "prompt repeated in samples", edit_lines(VLM_SAMPLES, lambda lines: [*lines, lines[0]]), VLM_SAMPLES,
         "line 9: doc.key"),
    Case(D, "second IFEval samples file", lambda tree: shutil.copy(tree / VLM_SAMPLES, tree / f"{PAIR}/vlm/"
         "samples_ifeval_strict_2026-12-01T00-00-00.000000.jsonl"), f"{PAIR}/vlm/samples_ifeval_strict_2026-12-01",
         "", says="second"),
    Case(D, "pair and task twice in a CSV", csv_rows(CSV_ROW, CSV_ROW), CSV_FILE, "line 3: task", command="import"),
    Case(D, "two VLM ids, one entry name", csv_rows(CSV_ROW, _row(vlm="other/VLM-A")), CSV_FILE, "line 3: vlm",
         command="import"),
    Case(D, "CSV repeats an existing VLM", csv_rows(_row(vlm="sinkbench-fixtures/tiny-vlm-published")),
         "submissions/pairs/tiny-vlm-published/metadata.json", "vlm", command="import"),
    Case(D, "repeated CSV column", csv_rows([*CSV_ROW, "9.0"], header=[*CSV_HEADER, "delta"]), CSV_FILE,
         "line 1: header", command="import"),
    # 4. lm-eval settings: what lm-eval always writes is required, and the effective settings are compared.
    Case(S, "n-samples of a task deleted", edit_json(VLM_RESULTS, _drop_task_records("n-samples")), VLM_RESULTS,
         "n-samples.ifeval_strict"),
    Case(S, "configs, versions, n-shot deleted on both sides",
         on_both_sides(_drop_task_records("configs", "versions", "n-shot")), REF_STRICT, "configs.ifeval_strict"),
    Case(S, "versions of a task deleted on both sides", on_both_sides(_drop_task_records("versions")), VLM_RESULTS,
         "versions.ifeval_strict"),
    Case(S, "n-shot of a task deleted on both sides", on_both_sides(_drop_task_records("n-shot")), VLM_RESULTS,
         "n-shot.ifeval_strict"),
    Case(S, "configs block deleted on both sides", on_both_sides(lambda d: d.pop("configs")), VLM_RESULTS,
         "configs"),
    Case(S, "n-samples block deleted", edit_json(VLM_RESULTS, lambda d: d.pop("n-samples")), VLM_RESULTS,
         "n-samples"),
    Case(S, "config.limit deleted", edit_json(VLM_RESULTS, lambda d: d["config"].pop("limit")), VLM_RESULTS,
         "config.limit"),
    Case(S, "n-samples of S deleted in a backbone", edit_json(BACKBONE_SINK, _drop_task_records(
         "n-samples", task="sink_strength")), BACKBONE_SINK, "n-samples.sink_strength"),
    Case(S, "task claimed to be a group", edit_json(VLM_RESULTS, _claim_group), VLM_RESULTS,
         "n-samples.ifeval_strict"),
    Case(S, "--limit used", set_json(VLM_RESULTS, ["config", "limit"], 100), VLM_RESULTS, "config.limit"),
    Case(S, "effective below original", set_json(VLM_RESULTS, ["n-samples", "gsm8k_cot_strict", "effective"], 100),
         VLM_RESULTS, "n-samples.gsm8k_cot_strict"),
    Case(S, "num_fewshot differs, n-shot equal", set_json(VLM_RESULTS, ["configs", "ifeval_strict", "num_fewshot"], 3),
         VLM_RESULTS, "configs.ifeval_strict.num_fewshot"),
    Case(S, "n-shot differs", set_json(VLM_RESULTS, ["n-shot", "ifeval_strict"], 3), VLM_RESULTS,
         "n-shot.ifeval_strict"),
    Case(S, "generation kwargs differ", set_json(VLM_RESULTS, ["configs", "ifeval_strict", "generation_kwargs",
         "temperature"], 0.7), VLM_RESULTS, "configs.ifeval_strict.generation_kwargs"),
    Case(S, "prompt template differs", set_json(VLM_RESULTS, ["configs", "ifeval_strict", "doc_to_text"], "x"),
         VLM_RESULTS, "configs.ifeval_strict.doc_to_text"),
    Case(S, "metric list differs", set_json(VLM_RESULTS, ["configs", "gsm8k_cot_strict", "metric_list"], []),
         VLM_RESULTS, "configs.gsm8k_cot_strict.metric_list"),
    Case(S, "task version differs", set_json(VLM_RESULTS, ["versions", "ifeval_strict"], 2.0), VLM_RESULTS,
         "versions.ifeval_strict"),
    Case(S, "system instruction differs, no sha", set_json(VLM_RESULTS, ["system_instruction"], "Answer briefly."),
         VLM_RESULTS, "system_instruction"),
    Case(S, "chat template dropped on one side", edit_json(VLM_RESULTS, lambda d: d.pop("chat_template")),
         VLM_RESULTS, "chat template applied"),
    Case(S, "fewshot_as_multiturn differs", set_json(VLM_RESULTS, ["fewshot_as_multiturn"], False), VLM_RESULTS,
         "fewshot_as_multiturn"),
    Case(S, "run-wide gen_kwargs differ", set_json(VLM_RESULTS, ["config", "gen_kwargs"], {"temperature": 1.0}),
         VLM_RESULTS, "config.gen_kwargs"),
    Case(S, "test set size differs", set_json(VLM_RESULTS, ["n-samples", "gsm8k_cot_strict"], {"original": 1000,
         "effective": 1000}), VLM_RESULTS, "n-samples.gsm8k_cot_strict.original"),
    Case(S, "limit used, site build", set_json(VLM_RESULTS, ["config", "limit"], 100), VLM_RESULTS, "config.limit",
         command="site"),
    # 5. Invisible and control characters: refused in every name, id and key; never printed raw.
    Case(C, "NUL in a results task key", edit_json(VLM_RESULTS, lambda d: d["results"].update({"x\x00": {}})),
         VLM_RESULTS, "results.x\x00"),
    Case(C, "U+202E in a metric key", edit_json(VLM_RESULTS, lambda d: d["results"]["ifeval_strict"].update(
         {"acc\u202e,none": 0.5})), VLM_RESULTS, "results.ifeval_strict.acc\u202e"),
    Case(C, "newline in a metric key", edit_json(VLM_RESULTS, lambda d: d["results"]["ifeval_strict"].update(
         {"acc\n,none": 0.5})), VLM_RESULTS, "results.ifeval_strict.acc\n"),
    Case(C, "U+2028 in a configs key", edit_json(VLM_RESULTS, lambda d: d["configs"].update({"x\u2028": {}})),
         VLM_RESULTS, "configs.x\u2028"),
    Case(C, "U+200B in a display name", set_json(PAIR_META, ["vlm", "display_name"], "Tiny\u200bVLM"), PAIR_META,
         "vlm.display_name"),
    Case(C, "U+200F in a display name", set_json(PAIR_META, ["vlm", "display_name"], "Tiny\u200fVLM"), PAIR_META,
         "vlm.display_name"),
    Case(C, "U+2028 in a display name", set_json(PAIR_META, ["reference_llm", "display_name"], "a\u2028b"),
         PAIR_META, "reference_llm.display_name"),
    Case(C, "U+2029 in a citation", set_json(REPORTED, ["citation", "source"], "A\u2029B"), REPORTED,
         "citation.source"),
    Case(C, "BOM in a submitter", set_json(REPORTED, ["submitter"], "\ufeffme"), REPORTED, "submitter"),
    Case(C, "escape sequence in a submitter", set_json(REPORTED, ["submitter"], "\x1b[31mred"), REPORTED,
         "submitter"),
    Case(C, "NEL in a table", set_json(REPORTED, ["reported", "tasks", 0, "table"], "T\x852"), REPORTED,
         "reported.tasks.0.table"),
    Case(C, "soft hyphen in a display name", set_json(BACKBONE_META, ["model", "display_name"], "ti\u00adny"),
         BACKBONE_META, "model.display_name"),
    Case(C, "private-use character in notes", set_json(BACKBONE_META, ["notes"], "see \ue000"), BACKBONE_META,
         "notes"),
    Case(C, "bidi isolate in the recipe", set_json(PAIR_META, ["vl_recipe"], "SFT \u2066x\u2069"), PAIR_META,
         "vl_recipe"),
    Case(C, "carriage return in notes", set_json(BACKBONE_META, ["notes"], "a\rb"), BACKBONE_META, "notes"),
    Case(C, "NUL in a sample key", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0], "doc": {**lines[0]["doc"],
         "key": "2001\x00"}}, *lines[1:]]), VLM_SAMPLES, "line 1: doc.key"),
    Case(C, "U+200B in an instruction id", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0], "doc": {
         **lines[0]["doc"], "instruction_id_list": ["punctuation\u200b:no_comma", "keywords:existence"]}},
         *lines[1:]]), VLM_SAMPLES, "line 1: doc.instruction_id_list.0"),
    Case(C, "bidi override in a group name", set_json(VLM_RESULTS, ["group_subtasks", "ifeval_strict"],
         ["a\u202eb"]), VLM_RESULTS, "group_subtasks.ifeval_strict.0"),
    Case(C, "bidi override in an entry name", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny\u202evlm"),
         "submissions/pairs/tiny\u202evlm", "name"),
    Case(C, "entry name that is not UTF-8", copy_entry("submissions/pairs/tiny-vlm-reported", "tiny-\udcffvlm"),
         "submissions/pairs/tiny-\udcffvlm", "name"),
    Case(C, "bidi override in a file name", write(f"{PAIR}/vlm/results_\u202ex.json", "{}"),
         f"{PAIR}/vlm/results_\u202ex.json", "", says="not a file this layout expects"),
    Case(C, "NUL in a link", set_json(PAIR_META, ["links"], ["https://example.org/\x00"]), PAIR_META, "links.0"),
    Case(C, "U+200B in a link", set_json(PAIR_META, ["links"], ["https://exa\u200bmple.org/"]), PAIR_META,
         "links.0"),
    Case(C, "U+202E in a citation URL", set_json(REPORTED, ["citation", "url"], "https://example.org/\u202egpj"),
         REPORTED, "citation.url"),
    Case(C, "unassigned code point in a display name", set_json(PAIR_META, ["vlm", "display_name"], "Tiny\u0378"),
         PAIR_META, "vlm.display_name"),
    Case(C, "blank display name", set_json(PAIR_META, ["vlm", "display_name"], "   "), PAIR_META,
         "vlm.display_name"),
    Case(C, "Hangul filler as a display name", set_json(PAIR_META, ["vlm", "display_name"], "\u3164"), PAIR_META,
         "vlm.display_name"),
    Case(C, "U+202E in a system instruction", set_json(VLM_RESULTS, ["system_instruction"], "Be brief\u202e"),
         VLM_RESULTS, "system_instruction"),
    Case(C, "NUL in a recorded version", set_json(REF_SINK, ["transformers_version"], "5.24.0\x00"), REF_SINK,
         "transformers_version"),
    Case(C, "BEL in a task's metadata", set_json(REF_SINK, ["configs", "sink_strength", "metadata", "argmax"],
         "per_query\x07"), REF_SINK, "configs.sink_strength.metadata.argmax"),
    Case(C, "U+2066 in config.json", set_json(f"{PAIR}/reference/config.json", ["architectures"], ["Qwen\u2066"]),
         f"{PAIR}/reference/config.json", "architectures.0"),
    Case(C, "U+200B in a profile's prompt", set_json(PROFILE, ["calibration_prompts"], ["Write\u200b"]), PROFILE,
         "calibration_prompts.0"),
    Case(C, "U+200B in a display name, aggregate", set_json(PAIR_META, ["vlm", "display_name"], "Tiny\u200bVLM"),
         PAIR_META, "vlm.display_name", command="aggregate"),
    Case(C, "U+202E in a display name, site build", set_json(PAIR_META, ["vlm", "display_name"], "Tiny\u202eVLM"),
         PAIR_META, "vlm.display_name", command="site"),
    Case(C, "U+202E in a CSV table cell", csv_rows([*CSV_ROW, "Table\u202e2"], header=[*CSV_HEADER, "table"]),
         CSV_FILE, "line 2: table", command="import"),
    Case(C, "NUL in a CSV id", csv_rows(_row(reference_llm="org/llm\x00")), CSV_FILE, "line 2: reference_llm",
         command="import"),
    Case(C, "U+2028 in --source", csv_rows(CSV_ROW), "--source", "citation.source", command="import",
         args=("--source", "A\u2028B")),
    Case(C, "escape sequence in --submitter", csv_rows(CSV_ROW), "--submitter", "submitter", command="import",
         args=("--submitter", "\x1b]0;x\x07")),
    # 6. Files: only plain files with one name, readable, where the layout expects them.
    Case(F, "hard link named like a samples file", hard_link(f"{PAIR}/vlm/samples_gsm8k_cot_strict_2026.jsonl"),
         f"{PAIR}/vlm/samples_gsm8k_cot_strict_2026.jsonl", "", says="hard link"),
    Case(F, "hard-linked results file", hard_link(VLM_RESULTS), VLM_RESULTS, "", says="hard link"),
    Case(F, "hard-linked metadata.json", hard_link(REPORTED), REPORTED, "", says="hard link"),
    Case(F, "hard-linked profile", hard_link(PROFILE), PROFILE, "", says="hard link"),
    Case(F, "hard-linked config.json", hard_link(f"{PAIR}/reference/config.json"), f"{PAIR}/reference/config.json",
         "", says="hard link"),
    Case(F, "hard link, site build", hard_link(f"{PAIR}/vlm/samples_gsm8k_cot_strict_2026.jsonl"),
         f"{PAIR}/vlm/samples_gsm8k_cot_strict_2026.jsonl", "", command="site"),
    Case(F, "symbolic link to a results file", symlink(VLM_RESULTS, "outside.json"), VLM_RESULTS, ""),
    Case(F, "symbolic link to a samples file", symlink(VLM_SAMPLES, "outside.jsonl"), VLM_SAMPLES, ""),
    Case(F, "symbolic link as metadata.json", symlink(REPORTED, "outside.json"), REPORTED, ""),
    Case(F, "symbolic link as profile", symlink(PROFILE, "outside.json"), PROFILE, ""),
    Case(F, "symbolic link as entry", symlink("submissions/pairs/tiny-vlm-reported", "outside"),
         "submissions/pairs/tiny-vlm-reported", ""),
    Case(F, "symbolic link as side folder", symlink(f"{PAIR}/vlm", "outside"), f"{PAIR}/vlm", ""),
    Case(F, "symbolic link as kind folder", symlink("submissions/backbones", "outside"), "submissions/backbones",
         ""),
    Case(F, "FIFO named like a results file", fifo(f"{PAIR}/vlm/results_fifo.json"), f"{PAIR}/vlm/results_fifo.json",
         ""),
    Case(F, "FIFO as profile", fifo(PROFILE), PROFILE, "", says="not a regular file"),
    Case(F, "unreadable metadata.json", unreadable(REPORTED), REPORTED, "", says="Permission denied"),
    Case(F, "unreadable results file", unreadable(VLM_RESULTS), VLM_RESULTS, "", says="Permission denied"),
    Case(F, "unreadable samples file", unreadable(VLM_SAMPLES), VLM_SAMPLES, "", says="Permission denied"),
    Case(F, "unreadable samples file of another task", both(write(f"{PAIR}/vlm/samples_mmlu_2026.jsonl", "{}\n"),
         unreadable(f"{PAIR}/vlm/samples_mmlu_2026.jsonl")), f"{PAIR}/vlm/samples_mmlu_2026.jsonl", "",
         says="Permission denied"),
    Case(F, "unreadable samples file of another task, site build", both(write(f"{PAIR}/vlm/samples_mmlu_2026.jsonl",
         "{}\n"), unreadable(f"{PAIR}/vlm/samples_mmlu_2026.jsonl")), f"{PAIR}/vlm/samples_mmlu_2026.jsonl", "",
         command="site"),
    Case(F, "unreadable config.json", unreadable(f"{PAIR}/reference/config.json"), f"{PAIR}/reference/config.json",
         "", says="Permission denied"),
    Case(F, "unreadable side folder", unreadable(f"{PAIR}/vlm"), f"{PAIR}/vlm", "", says="Permission denied"),
    Case(F, "unreadable metadata.json, aggregate", unreadable(REPORTED), REPORTED, "", command="aggregate"),
    Case(F, "metadata.json is a folder", both(remove(REPORTED), mkdir(REPORTED)), REPORTED, "",
         says="not a regular file"),
    Case(F, "dangling link as metadata.json", symlink(REPORTED, "nowhere.json"), REPORTED, "",
         says="symbolic link"),
    Case(F, "metadata.json missing", remove(REPORTED), "submissions/pairs/tiny-vlm-reported", ""),
    Case(F, "unexpected file in an entry", write(f"{PAIR}/vlm/notes.html", "<script></script>"),
         f"{PAIR}/vlm/notes.html", ""),
    Case(F, "hidden file in an entry", write(f"{BACKBONE}/.DS_Store", "x"), f"{BACKBONE}/.DS_Store", ""),
    Case(F, "folder inside a side", mkdir(f"{PAIR}/reference/extra"), f"{PAIR}/reference/extra", ""),
    Case(F, "stray folder at the root", mkdir("submissions/misc"), "submissions/misc", ""),
    Case(F, "stray file at the root", write("submissions/evil.json", "{}"), "submissions/evil.json", ""),
    Case(F, "samples of an unknown task", write(f"{PAIR}/vlm/samples_unknown_2026.jsonl", "{}\n"),
         f"{PAIR}/vlm/samples_unknown_2026.jsonl", ""),
    Case(F, "metadata.json not UTF-8", write(REPORTED, b'{"submitter": "\xff"}'), REPORTED, "", says="UTF-8"),
    Case(F, "metadata.json in UTF-16", write(REPORTED, '{"a": 1}'.encode("utf-16")), REPORTED, ""),
    Case(F, "empty metadata.json", write(REPORTED, ""), REPORTED, "", says="not valid JSON"),
    Case(F, "broken JSON", write(REPORTED, '{"schema_version": 1,'), REPORTED, "", says="not valid JSON"),
    Case(F, "oversized metadata.json", sparse(REPORTED, 1_000_001), REPORTED, "", says="cap"),
    Case(F, "oversized results file", sparse(VLM_RESULTS, 50_000_000), VLM_RESULTS, "", says="cap"),
    Case(F, "oversized samples file", sparse(VLM_SAMPLES, 100_000_001), VLM_SAMPLES, "", says="cap"),
    Case(F, "oversized other samples file", sparse(f"{PAIR}/vlm/samples_mmlu_2026.jsonl", 100_000_001),
         f"{PAIR}/vlm/samples_mmlu_2026.jsonl", "", says="cap"),
    Case(F, "oversized profile", sparse(PROFILE, 20_000_001), PROFILE, "", says="cap"),
    Case(F, "oversized config.json", sparse(f"{PAIR}/reference/config.json", 5_000_001),
         f"{PAIR}/reference/config.json", "", says="cap"),
    Case(F, "config.json not an object", write(f"{PAIR}/reference/config.json", "[]"),
         f"{PAIR}/reference/config.json", ""),
    Case(F, "oversized CSV", sparse(CSV_FILE, 5_000_001), CSV_FILE, "", command="import", says="cap"),
    Case(F, "CSV not UTF-8", csv_text(b"vlm\n\xff\n"), CSV_FILE, "", command="import", says="UTF-8"),
    Case(F, "missing CSV", lambda tree: None, "", "", command="import", code=2),
    Case(F, "missing submissions folder", remove("submissions"), "submissions", "", code=2),
    # 7. Amplification: what one entry can cost the build is bounded.
    Case(X, "profile of 300 layers", edit_json(PROFILE, _profile(300, 4)), PROFILE, "profile.layers"),
    Case(X, "profile of 300 x 1000", edit_json(PROFILE, _profile(300, 1000)), PROFILE, "profile.median_g"),
    Case(X, "profile of 257 heads", edit_json(PROFILE, _profile(2, 257)), PROFILE, "profile.median_g.0"),
    Case(X, "ragged profile", set_json(PROFILE, ["profile", "median_g", 1], [1.0]), PROFILE, "profile.median_g"),
    Case(X, "profile rows and layers disagree", edit_json(PROFILE, lambda d: d["profile"]["median_g"].pop()),
         PROFILE, "profile.median_g"),
    Case(X, "results of 1001 tasks", edit_json(VLM_RESULTS, lambda d: d["results"].update(
         {f"t{i}": {} for i in range(1001)})), VLM_RESULTS, "results"),
    Case(X, "task of 501 metrics", edit_json(VLM_RESULTS, lambda d: d["results"]["ifeval_strict"].update(
         {f"m{i},none": 0.1 for i in range(501)})), VLM_RESULTS, "results.ifeval_strict"),
    Case(X, "metric key of 201 characters", edit_json(VLM_RESULTS, lambda d: d["results"]["ifeval_strict"].update(
         {"m" * 201: 0.1})), VLM_RESULTS, "results.ifeval_strict"),
    Case(X, "51 reported tasks", edit_json(REPORTED, lambda d: d["reported"].update(tasks=[
         {"task": "ifeval_strict", "delta": 0.0, "table": str(i)} for i in range(51)])), REPORTED, "reported.tasks"),
    Case(X, "21 links", set_json(PAIR_META, ["links"], [f"https://example.org/{i}" for i in range(21)]), PAIR_META,
         "links"),
    Case(X, "notes of 4001 characters", set_json(BACKBONE_META, ["notes"], "n" * 4001), BACKBONE_META, "notes"),
    Case(X, "display name of 201 characters", set_json(PAIR_META, ["vlm", "display_name"], "d" * 201), PAIR_META,
         "vlm.display_name"),
    Case(X, "51 IFEval categories", set_json(REPORTED, ["reported", "ifeval_regressions", "lost_by_category"],
         {f"c{chr(97 + i // 26)}{chr(97 + i % 26)}": 0 for i in range(51)}), REPORTED,
         "reported.ifeval_regressions.lost_by_category"),
    Case(X, "101 instructions in a prompt", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0], "doc": {
         **lines[0]["doc"], "instruction_id_list": ["keywords:x"] * 101}}, *lines[1:]]), VLM_SAMPLES,
         "line 1: doc.instruction_id_list"),
    Case(X, "entry of 104 files", _many_files(BACKBONE, 100, 10), BACKBONE, "", says="104 files"),
    Case(X, "entry of 594 MB", _many_files(BACKBONE, 6, 99_000_000), BACKBONE, "", says="an entry may hold"),
    Case(X, "entry of 10,501 metrics", edit_json(f"{BACKBONE}/results_2026-11-30T03-00-00.000000.json",
         _many_tasks(21, 500)), BACKBONE, "results", says="metrics"),
    Case(X, "entry of 104 files, site build", _many_files(BACKBONE, 100, 10), BACKBONE, "", command="site"),
    Case(X, "JSON nested 100,000 deep", write(REPORTED, _deep(100_000)), REPORTED, "", says="nested too deeply"),
    Case(X, "profile of 300 x 1000, site build", edit_json(PROFILE, _profile(300, 1000)), PROFILE,
         "profile.layers", command="site"),
    # 8. CSV: import-reported names the CSV file, line and column of every problem.
    Case(V, "cell over the csv module's limit", csv_text(",".join(CSV_HEADER) + "\n" + ",".join(CSV_ROW) + "\n"
         + "x" * 200_000 + ",b\n"), CSV_FILE, "line 3", command="import"),
    Case(V, "unterminated quote", csv_text(",".join(CSV_HEADER) + "\n" + ",".join(CSV_ROW) + '\n"org/b,c\nd\n'),
         CSV_FILE, "line 3", command="import", says="never closed"),
    Case(V, "quote inside a cell", csv_text(",".join(CSV_HEADER) + '\norg/a,"x"y,none,1,ifeval_strict,-3,70,67\n'),
         CSV_FILE, "line 2", command="import"),
    Case(V, "more cells than columns", csv_rows([*CSV_ROW, "=cmd"]), CSV_FILE, "line 2", command="import"),
    Case(V, "missing column", csv_rows(CSV_ROW[:5], header=CSV_HEADER[:5]), CSV_FILE, "header", command="import"),
    Case(V, "unknown column", csv_rows([*CSV_ROW, "x"], header=[*CSV_HEADER, "homepage"]), CSV_FILE, "header",
         command="import"),
    Case(V, "empty CSV", csv_text(""), CSV_FILE, "", command="import", says="no rows"),
    Case(V, "header only", csv_rows(), CSV_FILE, "", command="import", says="no rows"),
    Case(V, "NUL byte in the CSV", csv_text(",".join(CSV_HEADER) + "\norg/a\x00,org/l,none,1,ifeval_strict,-3,,\n"),
         CSV_FILE, "line 2: vlm", command="import"),
    Case(V, "error on a later line of a quoted record", csv_text(",".join(CSV_HEADER) + "\n" + ",".join(CSV_ROW)
         + '\norg/b,org/l,none,1.2,"gsm8k_cot\n_strict",-3,,\n'), CSV_FILE, "line 3: task", command="import"),
    Case(V, "conflicting S for one pair", csv_rows(CSV_ROW, _row(task="gsm8k_cot_strict", sink_strength="2.0",
         reference_score="", vlm_score="")), CSV_FILE, "line 3: sink_strength", command="import"),
    Case(V, "delta disagrees with scores", csv_rows(_row(delta="-9.0")), CSV_FILE, "line 2: delta", command="import"),
    Case(V, "unknown task", csv_rows(_row(task="ifeval")), CSV_FILE, "line 2: task", command="import"),
    Case(V, "bad QK class", csv_rows(_row(qk_norm="global")), CSV_FILE, "line 2: qk_norm", command="import"),
    Case(V, "script as an id", csv_rows(_row(vlm="<script>alert(1)</script>")), CSV_FILE, "line 2: vlm",
         command="import"),
    Case(V, "bad --url", csv_rows(CSV_ROW), "--url", "citation.url", command="import",
         args=("--url", "javascript:alert(1)")),
    Case(V, "existing entry without --force", csv_rows(_row(vlm="org/tiny-vlm-reported")),
         "submissions/pairs/tiny-vlm-reported", "", command="import", says="already exists"),
    # 9. Publication: an --out that sinkbench did not write is never replaced.
    Case(P, "--out is a file", write("out2", "keep me"), "out2", "", command="aggregate", args=("--out", "out2"),
         says="not a folder"),
    Case(P, "--out is someone's folder", write("out2/thesis.tex", "keep me"), "out2", "", command="aggregate",
         args=("--out", "out2"), says="not written by sinkbench"),
    Case(P, "--out is a link to an output", lambda tree: os.symlink(tree / "out", tree / "out2"), "out2", "",
         command="aggregate", args=("--out", "out2"), says="not a folder"),
    Case(P, "--out is someone's folder, site build", write("out2/index.html", "keep me"), "out2", "",
         command="site", args=("--out", "out2"), says="not written by sinkbench"),
    Case(P, "--out is the submissions folder", lambda tree: None, "submissions", "", command="aggregate",
         args=("--out", "submissions"), says="overlap (one is inside the other)"),
    # Refused before issue 11, kept refused.
    Case("schema", "unknown field", set_json(REPORTED, ["homepage"], "x"), REPORTED, "homepage"),
    Case("schema", "missing field", drop_json(REPORTED, ["submitter"]), REPORTED, "submitter"),
    Case("schema", "unknown kind", set_json(REPORTED, ["kind"], "vlm"), REPORTED, ""),
    Case("schema", "unknown QK class", set_json(REPORTED, ["qk_norm"], "global"), REPORTED, "qk_norm"),
    Case("schema", "unknown task", set_json(REPORTED, ["reported", "tasks", 1, "task"], "gsm8k"), REPORTED,
         "reported.tasks.1.task", says="Did you mean 'gsm8k_cot_strict'"),
    Case("schema", "script in a model id", set_json(REPORTED, ["vlm", "id"], "<script>alert(1)</script>"), REPORTED,
         "vlm.id"),
    Case("schema", "path in a model id", set_json(REPORTED, ["vlm", "id"], "../../etc/passwd"), REPORTED, "vlm.id"),
    Case("schema", "javascript link", set_json(REPORTED, ["links"], ["javascript:alert(1)"]), REPORTED, "links.0"),
    Case("schema", "metadata.json is a list", write(REPORTED, "[]"), REPORTED, ""),
    Case("schema", "samples line missing a field", edit_lines(VLM_SAMPLES, lambda lines: [{k: v for k, v in
         lines[0].items() if k != "doc"}]), VLM_SAMPLES, "line 1: doc"),
    Case("rules", "kind in the wrong folder", rename("submissions/backbones/tiny-llm-reported", "../pairs/tiny-llm-r"),
         "submissions/pairs/tiny-llm-r/metadata.json", "kind"),
    Case("rules", "reported entry without citation", drop_json(REPORTED, ["citation"]), REPORTED, "citation"),
    Case("rules", "measured revision missing", set_json(PAIR_META, ["vlm", "revision"], None), PAIR_META,
         "vlm.revision"),
    Case("rules", "revision disagrees with results", set_json(REF_STRICT, ["config", "model_sha"], "deadbeef"),
         REF_STRICT, "config.model_revision"),
    Case("rules", "QK class disagrees with config", set_json(f"{PAIR}/reference/config.json", ["model_type"],
         "llama"), PAIR_META, "qk_norm"),
    Case("rules", "counts do not add up", set_json(REPORTED, ["reported", "ifeval_regressions", "both_fail"], 40),
         REPORTED, "reported.ifeval_regressions"),
    Case("rules", "samples disagree with results", edit_lines(VLM_SAMPLES, lambda lines: [{**lines[0],
         "prompt_level_strict_acc": False, "inst_level_strict_acc": [False, True]}, *lines[1:]]), VLM_SAMPLES,
         "prompt_level_strict_acc"),
    Case("rules", "required task missing", edit_json(VLM_RESULTS, _drop_task_records("results", "configs",
         "versions", "n-shot", "n-samples", task="gsm8k_cot_strict")), f"{PAIR}/vlm", "results"),
]  # fmt: skip


# --- the runner --------------------------------------------------------------------------------------------


def _argv(case: Case, tmp: Path) -> list[str]:
    root = str(tmp / "submissions")
    options = dict(zip(case.args[::2], case.args[1::2], strict=True))
    out = str(tmp / options.pop("--out", "out"))
    extra = [item for pair in options.items() for item in pair]
    if case.command == "validate":
        return ["validate", root, *extra]
    if case.command == "aggregate":
        return ["aggregate", "--submissions", root, "--out", out, *extra]
    if case.command == "site":
        return ["site", "build", "--submissions", root, "--out", out, *extra]
    source = ["--source", SOURCE] if "--source" not in options else []
    return ["import-reported", str(tmp / CSV_FILE), *source, "--out", root, *extra]


def snapshot(folder: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``folder`` (links not followed): its mode and its content's digest (or link target).

    Lock files are left out: taking the lock beside ``--out`` is allowed to create one.
    """
    found: dict[str, tuple[int, str]] = {}
    for directory, folders, files in os.walk(folder):
        for name in folders + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            if name.endswith(".lock"):
                continue
            found[os.path.relpath(path, folder)] = (info.st_mode, _content(path, info))
    return found


def _content(path: str, info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return "-> " + os.readlink(path)
    if not stat.S_ISREG(info.st_mode):
        return ""
    if info.st_size > 1_000_000:  # the sparse oversized files: size and time are enough
        return f"{info.st_size} bytes, modified {info.st_mtime_ns}"
    try:
        with open(path, "rb") as stream:
            return hashlib.sha256(stream.read()).hexdigest()
    except PermissionError:
        return "unreadable"


def _escaped(text: str) -> str:
    """``text`` as the CLI prints names: every non-printable character as ``\\uXXXX``."""
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in text)


def _raw_invisible(text: str) -> list[str]:
    return [
        f"U+{ord(char):04X}" for char in text if char != "\n" and unicodedata.category(char) in _RAW_FORBIDDEN
    ]


def _previous_output(out: Path) -> None:
    """An earlier output of sinkbench in ``out``, which a refused run must leave as it is."""
    out.mkdir()
    (out / MARKER).write_text("written by sinkbench\n", encoding="utf-8")
    (out / "pairs.csv").write_text("entry,task\nold,ifeval_strict\n", encoding="utf-8")


def run_case(
    case: Case, tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """Apply ``case`` to a copy of the fixtures, run its command, check the contract; return the output."""
    shutil.copytree(FIXTURES, tmp / "submissions")
    _previous_output(tmp / "out")
    case.mutate(Tree(tmp, monkeypatch))
    before = snapshot(tmp)
    capsys.readouterr()
    code = main(_argv(case, tmp))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert code == case.code, f"exit {code}, expected {case.code}:\n{text}"
    assert "Traceback" not in text, text
    assert not _raw_invisible(text), f"raw {_raw_invisible(text)} in the output:\n{text!r}"
    lines = text.splitlines()
    file, field = _escaped(case.file), _escaped(case.field or "<file>")
    if case.code == 1 and case.command in {"validate", "aggregate", "site", "import"} and case.kind != P:
        assert any(file in line and f": {field}" in line and case.says in line for line in lines), (
            f"no line names {file!r}, field {field!r} and {case.says!r}:\n{text}"
        )
    else:
        assert any(file in line and case.says in line for line in lines), f"{file!r} / {case.says!r}:\n{text}"
        assert len([line for line in text.splitlines() if line.strip()]) == 1, f"one line expected:\n{text}"
    assert snapshot(tmp) == before, "the command changed files on disk"
    return text


@pytest.mark.parametrize("case", [pytest.param(case, id=f"{case.kind}: {case.name}") for case in CASES])
def test_hostile_input_is_refused_with_file_and_field(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_case(case, tmp_path, monkeypatch, capsys)


def test_the_corpus_covers_every_class_of_issue_11() -> None:
    kinds = {case.kind for case in CASES}
    assert {A, N, D, S, C, F, X, V, P} <= kinds
    assert len(CASES) >= 100
    assert len({(case.kind, case.name) for case in CASES}) == len(CASES)


def test_the_unmutated_fixtures_pass_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus's baseline: without a mutation, validate and import-reported succeed on the same tree."""
    shutil.copytree(FIXTURES, tmp_path / "submissions")
    csv_rows(CSV_ROW)(Tree(tmp_path, pytest.MonkeyPatch()))
    assert main(["validate", str(tmp_path / "submissions")]) == 0
    assert (
        main(["aggregate", "--submissions", str(tmp_path / "submissions"), "--out", str(tmp_path / "o")]) == 0
    )
    assert main(_argv(Case(V, "", lambda tree: None, "", "", command="import"), tmp_path)) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_formula_cells_are_neutralised_in_csv_and_kept_in_json(tmp_path: Path) -> None:
    """Class 8: a text cell a spreadsheet would run gets a leading quote in every CSV; its JSON twin is as given."""
    shutil.copytree(FIXTURES, tmp_path / "submissions")
    hostile = {
        '=HYPERLINK("https://evil.example","x")': ["reported", "tasks", 0, "table"],
        "@SUM(1+1)": ["vlm", "display_name"],
        " +cmd|' /C calc'!A0": ["reported", "tasks", 1, "table"],
    }
    for value, path in hostile.items():
        set_json(REPORTED, path, value)(Tree(tmp_path, pytest.MonkeyPatch()))
    assert (
        main(["aggregate", "--submissions", str(tmp_path / "submissions"), "--out", str(tmp_path / "o")]) == 0
    )
    cells = [cell for row in csv.reader((tmp_path / "o/pairs.csv").open(encoding="utf-8")) for cell in row]
    assert not [cell for cell in cells if cell.lstrip(" ").startswith(("=", "+", "@", "\t", "\r"))]
    assert '\'=HYPERLINK("https://evil.example","x")' in " ".join(cells)
    records = json.loads((tmp_path / "o/pairs.json").read_text(encoding="utf-8"))
    assert any(
        "=HYPERLINK(" in str(record["source"]) and "'=" not in str(record["source"]) for record in records
    )
    for cell in cells:
        if cell.startswith("-"):
            float(cell)  # a negative number stays a number
