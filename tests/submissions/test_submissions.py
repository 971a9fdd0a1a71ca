"""Tests of sinkbench.submissions: loading entries, every validation rule, hostile inputs."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sinkbench.cli import main
from sinkbench.submissions import load_submissions
from sinkbench.submissions.schema import METADATA_ADAPTER, SIZE_LIMITS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "submissions"
REPO_SUBMISSIONS = Path(__file__).parents[2] / "submissions"
PAIR = "pairs/tiny-vlm"
REF_STRICT = f"{PAIR}/reference/results_2026-11-30T00-10-00.000000.json"
REF_SINK = f"{PAIR}/reference/results_2026-11-30T00-00-00.000000.json"
VLM_RESULTS = f"{PAIR}/vlm/results_2026-11-30T01-00-00.000000.json"
VLM_SAMPLES = f"{PAIR}/vlm/samples_ifeval_strict_2026-11-30T01-00-00.000000.jsonl"
REPORTED = "pairs/tiny-vlm-reported/metadata.json"
BACKBONE = "backbones/tiny-llm"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A writable copy of the valid fixture submissions."""
    return Path(shutil.copytree(FIXTURES, tmp_path / "submissions"))


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def edit_lines(path: Path, change: Callable[[list[dict]], list[dict]]) -> None:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(line) + "\n" for line in change(lines)), encoding="utf-8")


def test_valid_fixtures_load_without_problems() -> None:
    loaded = load_submissions(FIXTURES)
    assert loaded.problems == ()
    kinds = {entry.name: (entry.kind, entry.provenance) for entry in loaded.entries}
    assert kinds == {
        "tiny-llm": ("backbone", "measured"),
        "tiny-llm-reported": ("backbone", "reported"),
        "tiny-vlm": ("pair", "measured"),
        "tiny-vlm-reported": ("pair", "reported"),
    }


def test_an_entry_named_twice_is_loaded_once() -> None:
    """A root and one of its own entries given together: no entry is a duplicate of itself."""
    once = load_submissions(FIXTURES)
    twice = load_submissions([FIXTURES, FIXTURES, FIXTURES / "pairs" / "tiny-vlm"])
    assert twice.problems == () and twice.checked == once.checked == 4
    assert [entry.name for entry in twice.entries] == [entry.name for entry in once.entries]


def test_measured_pair_numbers_come_from_the_results_files() -> None:
    entry = next(entry for entry in load_submissions(FIXTURES).entries if entry.name == "tiny-vlm")
    ifeval = entry.scores["ifeval_strict"]
    assert (ifeval.reference_score, ifeval.vlm_score, ifeval.delta) == (62.5, 37.5, -25.0)
    assert ifeval.relative_degradation == pytest.approx(-0.4)
    assert entry.scores["eq_bench_strict"].delta == pytest.approx(-7.5)  # EQ-Bench is already in points
    assert entry.sink_strength == 1.25
    assert entry.sink_metrics == {"share_g_above_2": 0.21, "position0_mass": 0.74, "sink_rate_0.3": 0.5}
    assert entry.sink_profile is not None and entry.sink_profile.profile.layers == [2, 3]
    reference, vlm = entry.ifeval_outcomes()
    assert [o.passed for o in reference].count(True) == 5 and [o.passed for o in vlm].count(True) == 3


def test_reported_pair_delta_prefers_the_scores_and_keeps_the_printed_delta() -> None:
    entry = next(entry for entry in load_submissions(FIXTURES).entries if entry.name == "tiny-vlm-reported")
    ifeval = entry.scores["ifeval_strict"]
    assert (ifeval.delta, ifeval.reported_delta, ifeval.derived) == (
        -2.0,
        -2.0,
        ("reference_score", "vlm_score"),
    )
    assert (
        entry.scores["gsm8k_cot_strict"].delta == -4.0
        and entry.scores["gsm8k_cot_strict"].reference_score is None
    )


def test_seeded_submissions_are_valid() -> None:
    loaded = load_submissions(REPO_SUBMISSIONS)
    assert loaded.problems == ()
    reported_pairs = [
        entry for entry in loaded.entries if entry.kind == "pair" and entry.provenance == "reported"
    ]
    assert len(reported_pairs) == 17  # the paper's Table 11 panel, six headline pairs included
    assert {"internvl3-8b", "qwen3-vl-8b-instruct", "idefics3-8b-llama3", "minicpm-v-4_5"} <= {
        entry.name for entry in reported_pairs
    }
    for entry in reported_pairs:  # the paper prints names, not Hub ids: every mapping says so
        assert entry.vlm.id_mapping == entry.llm.id_mapping == "unverified", entry.name


def _move_backbone_into_pairs(root: Path) -> None:
    (root / "backbones/tiny-llm-reported").rename(root / "pairs/tiny-llm-reported")


def _remove_ifeval_from_vlm(root: Path) -> None:
    def drop(data: dict) -> None:
        for block in ("results", "configs", "versions", "n-shot", "n-samples", "higher_is_better"):
            data[block].pop("gsm8k_cot_strict")

    edit_json(root / VLM_RESULTS, drop)


def _results_in_reported_entry(root: Path) -> None:
    (root / "pairs/tiny-vlm-reported/reference").mkdir()
    shutil.copy(root / REF_SINK, root / "pairs/tiny-vlm-reported/reference" / Path(REF_SINK).name)


def _task_twice(root: Path) -> None:
    strict = json.loads((root / REF_STRICT).read_text())

    def add(data: dict) -> None:
        data["results"]["gsm8k_cot_strict"] = strict["results"]["gsm8k_cot_strict"]

    edit_json(root / REF_SINK, add)


def _vlm_setting(block: str, value: object) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        def set_value(data: dict) -> None:
            if block == "generation_kwargs":
                data["configs"]["ifeval_strict"]["generation_kwargs"]["temperature"] = value
            elif block in {"versions", "n-shot"}:
                data[block]["ifeval_strict"] = value
            else:
                data[block] = value

        edit_json(root / VLM_RESULTS, set_value)

    return change


def _metadata(path: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda root: edit_json(root / path, change)


def _results(path: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda root: edit_json(root / path, change)


def _samples(change: Callable[[list[dict]], list[dict]]) -> Callable[[Path], None]:
    return lambda root: edit_lines(root / VLM_SAMPLES, change)


def _flip_first_pass(lines: list[dict]) -> list[dict]:
    lines[0]["prompt_level_strict_acc"] = False
    lines[0]["inst_level_strict_acc"] = [False, True]
    return lines


def _rename_key(lines: list[dict]) -> list[dict]:
    lines[0]["doc"]["key"] = 9999
    return lines


def _set(path: list[str], value: object) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _regressions(**values: object) -> Callable[[Path], None]:
    def change(data: dict) -> None:
        data["reported"]["ifeval_regressions"].update(values)

    return _metadata(REPORTED, change)


RULE_CASES = [
    ("kind folder", _move_backbone_into_pairs, "pairs/tiny-llm-reported/metadata.json", "kind",
     "kind is 'backbone' but the entry is in pairs/"),
    ("reported without citation", _metadata(REPORTED, lambda d: d.pop("citation")), REPORTED, "citation",
     "has no citation"),
    ("measured with reported block", _metadata(f"{PAIR}/metadata.json", _set(["reported"], json.loads(
        (FIXTURES / REPORTED).read_text())["reported"])), f"{PAIR}/metadata.json", "reported",
     "must take its numbers from its files"),
    ("reported with raw files", _results_in_reported_entry, "pairs/tiny-vlm-reported", "provenance",
     "holds raw result files"),
    ("measured without files", lambda root: [path.unlink() for path in (root / BACKBONE).glob("results_*.json")],
     BACKBONE, "provenance", "has no lm-eval results files"),
    ("reported with a profile", lambda root: shutil.copy(root / PAIR / "sink_profile.json",
     root / "pairs/tiny-vlm-reported/sink_profile.json"), "pairs/tiny-vlm-reported", "provenance",
     "holds raw result files"),
    ("revision missing", _metadata(f"{PAIR}/metadata.json", _set(["vlm", "revision"], None)),
     f"{PAIR}/metadata.json", "vlm.revision", "revision is not recorded"),
    ("side that is a file", lambda root: [shutil.rmtree(root / PAIR / "vlm"), (root / PAIR / "vlm").write_text("x")],
     f"{PAIR}/vlm", "", "is not a folder; a pair's vlm/ is a plain folder"),
    ("pair of one model", _metadata(REPORTED, lambda d: d["vlm"].update(
        id=d["reference_llm"]["id"].upper(), revision=d["reference_llm"]["revision"])), REPORTED, "vlm.id",
     "is the reference LLM itself"),
    ("pair of one model, unpinned", _metadata(REPORTED, lambda d: d["vlm"].update(
        id=d["reference_llm"]["id"], revision="main")), REPORTED, "vlm.id", "is the reference LLM itself"),
    ("required task missing", _remove_ifeval_from_vlm, f"{PAIR}/vlm", "results",
     "required tasks missing: gsm8k_cot_strict"),
    ("reported headline missing", _metadata(REPORTED, lambda d: d["reported"]["tasks"].pop(0)), REPORTED,
     "reported.tasks", "headline task ifeval_strict is missing"),
    ("task in two files", _task_twice, REF_STRICT, "results.gsm8k_cot_strict", "is also in"),
    ("limit used", _results(VLM_RESULTS, _set(["config", "limit"], 100)), VLM_RESULTS, "config.limit",
     "used --limit 100"),
    ("effective < original", _results(VLM_RESULTS, _set(["n-samples", "gsm8k_cot_strict", "effective"], 100)),
     VLM_RESULTS, "n-samples.gsm8k_cot_strict", "evaluated 100 of 1319 documents"),
    ("lm-eval version missing", _results(VLM_RESULTS, lambda d: d.pop("lm_eval_version")), VLM_RESULTS,
     "lm_eval_version", "no lm-eval version recorded"),
    ("accuracy above 1", _results(VLM_RESULTS, _set(["results", "ifeval_strict", "prompt_level_strict_acc,none"],
     1.5)), VLM_RESULTS, "results.ifeval_strict.prompt_level_strict_acc,none", "outside [0.0, 1.0]"),
    ("metric not a number", _results(VLM_RESULTS, _set(["results", "gsm8k_cot_strict",
     "exact_match,flexible-extract"], "N/A")), VLM_RESULTS, "results.gsm8k_cot_strict.exact_match,flexible-extract",
     "not a number"),
    ("S out of range", _results(REF_SINK, _set(["results", "sink_strength", "sink_strength,none"], 1000.0)),
     REF_SINK, "results.sink_strength.sink_strength,none", "outside [-100.0, 100.0]"),
    ("S of 301 digits", _results(REF_SINK, _set(["results", "sink_strength", "sink_strength,none"], 10**300)),
     REF_SINK, "results.sink_strength.sink_strength,none", "1e+300 is outside [-100.0, 100.0]"),
    ("generation kwargs differ", _vlm_setting("generation_kwargs", 0.7), VLM_RESULTS,
     "configs.ifeval_strict.generation_kwargs", "differs between sides"),
    ("task version differs", _vlm_setting("versions", 2.0), VLM_RESULTS, "versions.ifeval_strict",
     "differs between sides"),
    ("few-shot differs", _vlm_setting("n-shot", 3), VLM_RESULTS, "n-shot.ifeval_strict", "differs between sides"),
    ("chat template differs", _vlm_setting("chat_template", None), VLM_RESULTS, "chat template applied",
     "reference True, VLM-LM False"),
    ("revision disagrees with results", _results(REF_STRICT, _set(["config", "model_sha"], "deadbeef")),
     REF_STRICT, "config.model_revision", "results record revision ['deadbeef']"),
    ("qk-norm disagrees with config", _results(f"{PAIR}/reference/config.json", _set(["model_type"], "llama")),
     f"{PAIR}/metadata.json", "qk_norm", "config.json says 'none'"),
    ("reported delta disagrees", _metadata(REPORTED, _set(["reported", "tasks", 0, "delta"], -5.0)), REPORTED,
     "reported.tasks.ifeval_strict.delta", "vlm_score - reference_score = -2.00"),
    ("counts do not add up", _regressions(both_fail=40), REPORTED, "reported.ifeval_regressions",
     "add up to 108, not n_prompts=100"),
    ("category above lost", _regressions(lost_by_category={"punctuation": 11}), REPORTED,
     "reported.ifeval_regressions.lost_by_category.punctuation", "exceeds the 10 lost prompts"),
    ("unknown category", _regressions(lost_by_category={"spelling": 1}), REPORTED,
     "reported.ifeval_regressions.lost_by_category.spelling", "unknown category"),
    ("scores disagree with counts", _regressions(both_pass=49, both_fail=33), REPORTED,
     "reported.tasks.ifeval_strict.reference_score", "disagrees with the regression counts (59.00)"),
    ("samples miss a prompt", _samples(lambda lines: lines[1:]), VLM_SAMPLES, "",
     "has 7 prompts but the results evaluated 8"),
    ("samples disagree with results", _samples(_flip_first_pass), VLM_SAMPLES, "prompt_level_strict_acc",
     "differs from the results' 0.375000"),
    ("samples cover other prompts", _samples(_rename_key), VLM_SAMPLES, "doc.key", "prompt keys differ"),
    ("profile shape", _metadata(f"{PAIR}/sink_profile.json", lambda d: d["profile"]["median_g"].pop()),
     f"{PAIR}/sink_profile.json", "profile.median_g", "has 1 rows of widths [4] for 2 layers"),
    ("duplicate pair", lambda root: shutil.copytree(root / PAIR, root / "pairs/tiny-vlm-again"),
     "pairs/tiny-vlm-again/metadata.json", "vlm", "already submitted as submissions/pairs/tiny-vlm"),
    ("one LLM, two QK-norm classes",
     _metadata("backbones/tiny-llm-reported/metadata.json", _set(["model", "id"], "sinkbench-fixtures/tiny-llm-published")),
     REPORTED, "qk_norm", "is 'none' but submissions/backbones/tiny-llm-reported gives"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "file", "field", "message"), [case[1:] for case in RULE_CASES],
                         ids=[case[0] for case in RULE_CASES])  # fmt: skip
def test_each_rule_reports_file_field_and_message(
    root: Path, mutate, file: str, field: str, message: str
) -> None:
    mutate(root)
    problems = load_submissions(root).problems
    matching = [
        p for p in problems if p.file == f"submissions/{file}" and p.field == field and message in p.message
    ]
    assert matching, f"expected {file} / {field} / {message!r}; got:\n" + "\n".join(map(str, problems))
    assert all(problem.fix for problem in problems)


def _write(relative: str, text: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).write_text(text, encoding="utf-8")


def _sparse_file(relative: str, size: int) -> Callable[[Path], None]:
    def create(root: Path) -> None:
        with (root / relative).open("wb") as stream:
            stream.truncate(size)

    return create


def _symlink(relative: str, target: str) -> Callable[[Path], None]:
    def create(root: Path) -> None:
        (root / relative).unlink()
        os.symlink(target, root / relative)

    return create


def _entry_named(name: str) -> Callable[[Path], None]:
    return lambda root: shutil.copytree(root / "pairs/tiny-vlm-reported", root / "pairs" / name)


HOSTILE_CASES = [
    ("broken JSON", _write(REPORTED, '{"schema_version": 1,'), REPORTED, "", "is not valid JSON"),
    ("NaN", lambda root: (root / REF_SINK).write_text((root / REF_SINK).read_text().replace("1.25", "NaN")),
     REF_SINK, "", "non-finite number NaN"),
    ("Infinity", lambda root: (root / VLM_RESULTS).write_text((root / VLM_RESULTS).read_text().replace(
        "0.375", "Infinity", 1)), VLM_RESULTS, "", "non-finite number Infinity"),
    ("-Infinity in samples", lambda root: (root / VLM_SAMPLES).write_text("{\"doc_id\": -Infinity}\n"),
     VLM_SAMPLES, "", "line 1 is not accepted: non-finite number -Infinity"),
    ("duplicate key", _write(REPORTED, '{"kind": "pair", "kind": "backbone"}'), REPORTED, "", "duplicate key 'kind'"),
    ("50 MB results file", _sparse_file(VLM_RESULTS, 50 * 1024 * 1024), VLM_RESULTS, "",
     f"the cap for this kind of file is {SIZE_LIMITS['results']:,} bytes"),
    ("oversized samples", _sparse_file(VLM_SAMPLES, SIZE_LIMITS["samples"] + 1), VLM_SAMPLES, "", "the cap"),
    ("dot-dot name", _entry_named("a..b"), "pairs/a..b", "name", "entry name 'a..b' is not allowed"),
    ("script name", _entry_named("<script>"), "pairs/<script>", "name", "is not allowed"),
    ("upper-case name", _entry_named("Tiny"), "pairs/Tiny", "name", "is not allowed"),
    ("script in model id", _metadata(REPORTED, _set(["vlm", "id"], "<script>alert(1)</script>")), REPORTED,
     "vlm.id", "String should match pattern"),
    ("path in model id", _metadata(REPORTED, _set(["vlm", "id"], "../../etc/passwd")), REPORTED, "vlm.id",
     "String should match pattern"),
    ("absurd model id", _metadata(REPORTED, _set(["vlm", "id"], "a" * 300)), REPORTED, "vlm.id",
     "String should match pattern"),
    ("control character", _metadata(REPORTED, _set(["submitter"], "me\x07")), REPORTED, "submitter",
     "control character U+0007"),
    ("bidi override", _metadata(REPORTED, _set(["vl_recipe"], "SFT\u202e")), REPORTED, "vl_recipe",
     "control character U+202E"),
    ("javascript link", _metadata(REPORTED, _set(["links"], ["javascript:alert(1)"])), REPORTED, "links.0",
     "String should match pattern"),
    ("unknown field", _metadata(REPORTED, _set(["homepage"], "x")), REPORTED, "homepage",
     "Extra inputs are not permitted"),
    ("unknown kind", _metadata(REPORTED, _set(["kind"], "vlm")), REPORTED, "", "does not match any of the expected tags"),
    ("unknown task", _metadata(REPORTED, _set(["reported", "tasks", 1, "task"], "gsm8k")), REPORTED,
     "reported.tasks.1.task", "unknown task 'gsm8k'. Did you mean 'gsm8k_cot_strict'?"),
    ("delta out of range", _metadata(REPORTED, _set(["reported", "tasks", 1, "delta"], -250)), REPORTED,
     "reported.tasks.1.delta", "greater than or equal to -100"),
    ("linked results file", _symlink(VLM_RESULTS, "/etc/hostname"), f"{PAIR}/vlm/{Path(VLM_RESULTS).name}", "",
     "is a link"),
    ("unexpected file", _write(f"{PAIR}/vlm/notes.html", "<script></script>"), f"{PAIR}/vlm/notes.html", "",
     "is not a file this layout expects"),
    ("unexpected folder", lambda root: (root / BACKBONE / "extra").mkdir(), f"{BACKBONE}/extra", "",
     "where a plain file was expected"),
    ("stray root folder", lambda root: (root / "misc").mkdir(), "misc", "", "is not part of the submissions layout"),
    ("sample flags disagree", _samples(lambda lines: [{**lines[0], "prompt_level_strict_acc": False}, *lines[1:]]),
     VLM_SAMPLES, "line 1: prompt_level_strict_acc", "disagrees with inst_level_strict_acc"),
    ("sample repeated", _samples(lambda lines: [*lines, lines[0]]), VLM_SAMPLES, "line 9: doc.key",
     "appears twice"),
    ("sample missing field", _samples(lambda lines: [{k: v for k, v in lines[0].items() if k != "doc"}]),
     VLM_SAMPLES, "line 1: doc", "Field required"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "file", "field", "message"), [case[1:] for case in HOSTILE_CASES],
                         ids=[case[0] for case in HOSTILE_CASES])  # fmt: skip
def test_hostile_inputs_are_rejected(root: Path, mutate, file: str, field: str, message: str) -> None:
    mutate(root)
    loaded = load_submissions(root)
    matching = [p for p in loaded.problems if p.file == f"submissions/{file}" and p.field == field]
    assert any(message in problem.message for problem in matching), "\n".join(map(str, loaded.problems))


def test_a_file_wide_setting_mismatch_is_reported_once(root: Path) -> None:
    edit_json(root / VLM_RESULTS, _set(["chat_template"], None))
    fields = [problem.field for problem in load_submissions(root).problems]
    assert fields.count("chat template applied") == 1 and fields.count("fewshot_as_multiturn") == 0


def test_entry_with_unreadable_file_is_left_out_and_rules_skip_it(root: Path) -> None:
    (root / VLM_RESULTS).write_text("{", encoding="utf-8")
    loaded = load_submissions(root)
    assert "tiny-vlm" not in {entry.name for entry in loaded.entries}
    assert [problem.file for problem in loaded.problems] == [f"submissions/{VLM_RESULTS}"]


BACKBONE_SINK = f"{BACKBONE}/results_2026-11-30T02-00-00.000000.json"
BACKBONE_LIMITED = f"{BACKBONE}/results_2026-11-30T03-00-00.000000.json"


def test_backbone_strict_suite_may_use_limit_and_its_coverage_is_kept(root: Path) -> None:
    """The fixture backbone's GSM8K file is a ``--limit 250`` run; the same file in a pair is refused."""
    scores = next(entry for entry in load_submissions(root).entries if entry.name == "tiny-llm").scores
    assert scores["gsm8k_cot_strict"].coverage == (250, 1319)
    assert scores["gsm8k_cot_strict"].reference_score == pytest.approx(2.4)
    pair = next(entry for entry in load_submissions(root).entries if entry.name == "tiny-vlm").scores
    assert pair["gsm8k_cot_strict"].coverage is None
    shutil.copy(root / BACKBONE_LIMITED, root / PAIR / "reference")
    problems = {(p.field, p.message) for p in load_submissions(root).problems}
    assert ("config.limit", "the run used --limit 250.") in problems
    assert ("n-samples.gsm8k_cot_strict", "evaluated 250 of 1319 documents.") in problems


def test_limit_is_refused_for_sink_strength_even_in_a_backbone(root: Path) -> None:
    edit_json(root / BACKBONE_SINK, _set(["config", "limit"], 5))
    edit_json(root / BACKBONE_SINK, _set(["n-samples", "sink_strength", "effective"], 5))
    problems = {(p.field, p.message) for p in load_submissions(root).problems}
    assert problems == {
        ("config.limit", "the run used --limit 5."),
        ("n-samples.sink_strength", "evaluated 5 of 15 documents."),
    }


def test_problems_from_many_entries_are_reported_together(root: Path) -> None:
    edit_json(root / REPORTED, _set(["citation"], None))
    edit_json(root / VLM_RESULTS, _set(["config", "limit"], 5))
    fields = {problem.field for problem in load_submissions(root).problems}
    assert {"citation", "config.limit"} <= fields


def test_validate_command_exit_status_and_messages(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(root)]) == 0
    assert "4 entries checked, 4 loaded, 0 problem(s)." in capsys.readouterr().out
    edit_json(root / VLM_RESULTS, _set(["config", "limit"], 5))
    assert main(["validate", str(root / PAIR), str(root / "backbones")]) == 1
    out = capsys.readouterr().out
    assert (
        f"ERROR submissions/{VLM_RESULTS}: config.limit: the run used --limit 5. Fix: rerun without --limit"
        in out
    )
    assert main(["validate", str(root / "missing")]) == 2


def test_the_guide_s_metadata_example_is_valid() -> None:
    readme = (REPO_SUBMISSIONS.parent / "site" / "docs" / "guide" / "submitting.md").read_text(
        encoding="utf-8"
    )
    example = readme.split("```json\n", 1)[1].split("```", 1)[0]
    metadata = METADATA_ADAPTER.validate_python(
        json.loads(example.replace("COMMIT or sha256:HEX-OF-WEIGHTS", "abc1"))
    )
    assert (metadata.kind, metadata.provenance, metadata.model.revision) == ("backbone", "measured", "abc1")


def test_validate_defaults_to_the_repository_submissions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_SUBMISSIONS.parent)
    assert main(["validate"]) == 0


def _limit_ifeval(root: Path, files: tuple[str, ...], limit: int = 8, documents: int = 541) -> None:
    """Make ``files`` look like ``--limit`` runs of ifeval_strict: ``limit`` of ``documents`` prompts."""
    for file in files:
        edit_json(root / file, _set(["config", "limit"], limit))
        edit_json(root / file, _set(["n-samples", "ifeval_strict", "original"], documents))


def test_a_testbed_pair_may_use_limit_on_both_sides_and_shows_its_coverage(root: Path) -> None:
    _limit_ifeval(root, (REF_STRICT, VLM_RESULTS))
    assert {p.field for p in load_submissions(root).problems} >= {"config.limit", "n-samples.ifeval_strict"}
    edit_json(root / PAIR / "metadata.json", _set(["testbed"], True))
    loaded = load_submissions(root)
    assert loaded.problems == ()
    entry = next(entry for entry in loaded.entries if entry.name == "tiny-vlm")
    assert entry.testbed and entry.scores["ifeval_strict"].coverage == (8, 541)


def test_a_testbed_pair_must_limit_both_sides_alike(root: Path) -> None:
    edit_json(root / PAIR / "metadata.json", _set(["testbed"], True))
    _limit_ifeval(root, (REF_STRICT,))
    problems = {(p.file, p.field) for p in load_submissions(root).problems}
    assert (f"submissions/{VLM_RESULTS}", "config.limit") in problems
    assert (f"submissions/{VLM_RESULTS}", "n-samples.ifeval_strict.original") in problems


def test_a_testbed_pair_needs_only_s_and_ifeval_but_must_be_measured(root: Path) -> None:
    edit_json(root / PAIR / "metadata.json", _set(["testbed"], True))
    for file in (REF_STRICT, VLM_RESULTS):
        for task in ("gsm8k_cot_strict", "gpqa_diamond_cot_strict", "eq_bench_strict"):
            for block in ("results", "configs", "versions", "n-shot", "n-samples"):
                edit_json(root / file, lambda data, block=block, task=task: data[block].pop(task))
    assert load_submissions(root).problems == ()
    edit_json(root / REPORTED, _set(["testbed"], True))
    problems = [p for p in load_submissions(root).problems if p.field == "testbed"]
    assert [p.file for p in problems] == [f"submissions/{REPORTED}"]
    assert "a testbed pair must be measured" in problems[0].message
