"""Tests of sinkbench.submissions.import_reported (import-reported) and of the seeded reported entries against FACTS.md."""

from __future__ import annotations

import csv
import itertools
import json
import re
from pathlib import Path

import pytest

from sinkbench.cli import main
from sinkbench.errors import UserError
from sinkbench.submissions import load_submissions
from sinkbench.submissions.import_reported import ImportFailed, entry_name, import_reported
from sinkbench.tables.build import build_tables

REPO_SUBMISSIONS = Path(__file__).parents[2] / "submissions"
FACTS = Path(__file__).parents[2].parent / "shared" / "paper" / "FACTS.md"
HEADER = ["vlm", "reference_llm", "qk_norm", "sink_strength", "task", "delta", "reference_score", "vlm_score"]
ROW = ["org/vlm-a", "org/llm-a", "none", "1.2", "ifeval_strict", "-3.0", "70.0", "67.0"]
SOURCE = "A. Author. Fixture. arXiv 0000.00000 (2026)."


def write_csv(path: Path, rows: list[list[str]], header: list[str] = HEADER) -> Path:
    with path.open("w", newline="", encoding="utf-8") as stream:
        csv.writer(stream).writerows([header, *rows])
    return path


def _seed_rows() -> list[list[str]]:
    """The seeded (reported) pairs as import-reported rows (the CSV route must give the same statistics)."""
    rows = []
    for entry in (
        e for e in load_submissions(REPO_SUBMISSIONS).entries if e.kind == "pair" and not e.testbed
    ):
        for task, score in entry.scores.items():
            scores = [
                str(value) if value is not None else "" for value in (score.reference_score, score.vlm_score)
            ]
            rows.append([entry.vlm.id, entry.llm.id, entry.metadata.qk_norm, str(entry.sink_strength), task,
                         str(score.reported_delta), *scores])  # fmt: skip
    return rows


def test_import_of_the_seed_numbers_reproduces_the_seed_statistics(tmp_path: Path) -> None:
    import_reported(write_csv(tmp_path / "seeds.csv", _seed_rows()), source=SOURCE, out_dir=tmp_path / "s")
    imported = load_submissions(tmp_path / "s")
    assert imported.problems == ()
    assert {entry.vlm.id for entry in imported.entries} == {row[0] for row in _seed_rows()}
    ours = build_tables(imported.entries).correlations.drop(columns="spearman_ci")
    seeds = build_tables(load_submissions(REPO_SUBMISSIONS).entries).correlations.drop(columns="spearman_ci")
    assert ours.equals(seeds)


def test_imported_metadata_records_citation_and_numbers(tmp_path: Path) -> None:
    header = [*HEADER, "table", "derived"]
    csv_path = write_csv(tmp_path / "x.csv", [[*ROW, "Table 3", "reference_score;vlm_score"]], header)
    import_reported(csv_path, source=SOURCE, out_dir=tmp_path / "s", url="https://arxiv.org/abs/0000.00000")
    metadata = json.loads((tmp_path / "s" / "pairs" / "vlm-a" / "metadata.json").read_text())
    assert metadata["provenance"] == "reported" and metadata["citation"]["source"] == SOURCE
    assert metadata["reported"]["sink_strength"]["value"] == 1.2
    assert metadata["reported"]["tasks"] == [
        {"task": "ifeval_strict", "delta": -3.0, "table": "Table 3", "reference_score": 70.0, "vlm_score": 67.0,
         "derived": ["reference_score", "vlm_score"]}
    ]  # fmt: skip


def test_existing_entry_is_not_overwritten_without_force(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_reported(write_csv(tmp_path / "a.csv", [ROW]), source=SOURCE, out_dir=out)
    changed = write_csv(tmp_path / "b.csv", [[*ROW[:5], "-4.0", "70.0", "66.0"]])
    with pytest.raises(ImportFailed) as raised:
        import_reported(changed, source=SOURCE, out_dir=out)
    assert "already exists" in raised.value.problems[0].message and "--force" in raised.value.problems[0].fix
    assert (
        json.loads((out / "pairs/vlm-a/metadata.json").read_text())["reported"]["tasks"][0]["delta"] == -3.0
    )
    import_reported(changed, source=SOURCE, out_dir=out, force=True)
    assert (
        json.loads((out / "pairs/vlm-a/metadata.json").read_text())["reported"]["tasks"][0]["delta"] == -4.0
    )
    assert sorted(path.name for path in out.iterdir()) == ["pairs"]  # no staging folder or lock left behind


HOSTILE_ROWS = [
    ("NaN S", [[*ROW[:3], "NaN", *ROW[4:]]], "line 2: sink_strength", "is not a finite ASCII decimal number"),
    ("infinite delta", [[*ROW[:5], "inf", "", ""]], "line 2: delta", "is not a finite ASCII decimal number"),
    ("text score", [[*ROW[:6], "high", "67"]], "line 2: reference_score", "is not a finite ASCII decimal number"),
    ("script in id", [["<script>alert(1)</script>", *ROW[1:]]], "line 2: vlm", "String should match pattern"),
    ("path in id", [["../../etc/passwd", *ROW[1:]]], "line 2: vlm", "String should match pattern"),
    ("unknown task", [[*ROW[:4], "ifeval", *ROW[5:]]], "line 2: task", "Did you mean 'ifeval_strict'"),
    ("bad qk class", [[*ROW[:2], "global", *ROW[3:]]], "line 2: qk_norm", "Input should be 'per-head', 'layerwise'"),
    ("delta disagrees", [[*ROW[:5], "-9.0", "70.0", "67.0"]], "line 2: delta", "= -3.00"),
    ("conflicting S", [ROW, [*ROW[:3], "2.0", "gsm8k_cot_strict", "-1.0", "", ""]], "line 3: sink_strength",
     "2.0 conflicts with 1.2"),
    ("repeated task", [ROW, ROW], "line 3: task", "appears twice"),
    ("missing headline", [[*ROW[:4], "gsm8k_cot_strict", "-1.0", "", ""]], "line 2: task",
     "headline task ifeval_strict is missing"),
]  # fmt: skip


@pytest.mark.parametrize(("rows", "field", "message"), [case[1:] for case in HOSTILE_ROWS],
                         ids=[case[0] for case in HOSTILE_ROWS])  # fmt: skip
def test_bad_rows_are_refused_and_nothing_is_written(tmp_path: Path, rows, field: str, message: str) -> None:
    out = tmp_path / "s"
    with pytest.raises(ImportFailed) as raised:
        import_reported(write_csv(tmp_path / "x.csv", rows), source=SOURCE, out_dir=out)
    problems = raised.value.problems
    assert any(p.field == field and message in p.message for p in problems), "\n".join(map(str, problems))
    assert not out.exists() and [path.name for path in tmp_path.iterdir()] == ["x.csv"]


def test_wrong_header_is_refused(tmp_path: Path) -> None:
    csv_path = write_csv(
        tmp_path / "x.csv", [ROW[:5]], ["vlm", "reference_llm", "qk", "sink_strength", "task"]
    )
    with pytest.raises(ImportFailed, match="nothing was written") as raised:
        import_reported(csv_path, source=SOURCE, out_dir=tmp_path / "s")
    assert "missing columns ['delta', 'qk_norm'], unknown columns ['qk']" in raised.value.problems[0].message


def test_duplicate_of_an_existing_vlm_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_reported(write_csv(tmp_path / "a.csv", [ROW]), source=SOURCE, out_dir=out)
    (out / "pairs" / "vlm-a").rename(out / "pairs" / "renamed")
    with pytest.raises(ImportFailed) as raised:
        import_reported(write_csv(tmp_path / "b.csv", [ROW]), source=SOURCE, out_dir=out)
    assert "already submitted as s/pairs/renamed" in raised.value.problems[0].message


def test_a_folder_given_as_the_csv_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ImportFailed) as raised:
        import_reported(Path("."), source=SOURCE, out_dir=tmp_path / "s")
    assert str(raised.value.problems[0]).startswith(".: <file>: is not a regular file.")
    assert not (tmp_path / "s").exists()


def test_force_never_replaces_a_measured_entry(tmp_path: Path) -> None:
    out = tmp_path / "s"
    import_reported(write_csv(tmp_path / "a.csv", [ROW]), source=SOURCE, out_dir=out)
    measured = out / "pairs" / "vlm-a" / "vlm"
    measured.mkdir()
    (measured / "results.json").write_text("{}", encoding="utf-8")  # as a measured entry's run folder
    before = sorted((path, path.read_bytes() if path.is_file() else b"") for path in out.rglob("*"))
    with pytest.raises(ImportFailed) as raised:
        import_reported(write_csv(tmp_path / "b.csv", [ROW]), source=SOURCE, out_dir=out, force=True)
    (problem,) = raised.value.problems
    assert (
        problem.message.startswith("is a measured entry")
        and "remove the measured entry yourself" in problem.fix
    )
    assert sorted((path, path.read_bytes() if path.is_file() else b"") for path in out.rglob("*")) == before


@pytest.mark.parametrize("where", ["pairs", "pairs/entry", "pairs/entry/vlm"])
def test_an_out_that_is_not_a_submissions_root_is_refused_and_nothing_is_written(
    tmp_path: Path, where: str
) -> None:
    """An --out that names the pairs/ folder, an entry or a folder of one would nest the new entries inside."""
    out = tmp_path / "s"
    (out / "pairs" / "entry" / "vlm").mkdir(parents=True)
    (out / "pairs" / "entry" / "metadata.json").write_text("{}", encoding="utf-8")
    before = sorted(out.rglob("*"))
    given = out / where
    expected = (
        f"--out {given} is the pairs/ folder of a submissions root; pass the root that holds it ({out})"
        if where == "pairs"
        else f"--out {given} is inside the entry {out / 'pairs' / 'entry'}; pass the submissions root"
    )
    with pytest.raises(UserError) as refused:
        import_reported(write_csv(tmp_path / "a.csv", [ROW]), source=SOURCE, out_dir=given)
    assert str(refused.value).startswith(expected)
    assert sorted(out.rglob("*")) == before


def test_entry_names_are_safe() -> None:
    assert entry_name("OpenGVLab/InternVL3_5-8B") == "internvl3_5-8b"
    assert entry_name("Qwen/Qwen2.5-VL-7B-Instruct") == "qwen2.5-vl-7b-instruct"
    assert entry_name("org/<script>") == "script"


def test_import_reported_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv_path = write_csv(tmp_path / "x.csv", [ROW])
    out = tmp_path / "s"
    assert main(["import-reported", str(csv_path), "--source", SOURCE, "--out", str(out)]) == 0
    assert "pairs/vlm-a/metadata.json" in capsys.readouterr().out
    assert main(["import-reported", str(csv_path), "--source", SOURCE, "--out", str(out)]) == 1
    assert "already exists. Fix: pass --force" in capsys.readouterr().out
    assert main(["import-reported", str(csv_path), "--source", SOURCE, "--out", str(out), "--force"]) == 0
    assert main(["import-reported", str(tmp_path / "none.csv"), "--source", SOURCE, "--out", str(out)]) == 2
    assert main(["validate", str(out)]) == 0


# --- the seeded entries reproduce FACTS.md exactly ---------------------------------------------------------

SEED_NAMES = {
    "Qwen3-VL": "qwen3-vl-8b-instruct",
    "InternVL3.5": "internvl3.5-8b",
    "Qwen2.5-VL": "qwen2.5-vl-7b-instruct",
    "InternVL3": "internvl3-8b",
    "LLaVA-OV": "llava-onevision-qwen2-7b-ov",
    "Molmo2-O": "molmo2-o-7b",
}
TABLE_6_TASKS = [
    "mmlu",
    "boolq",
    "ifeval_strict",
    "eq_bench_strict",
    "gsm8k_cot_strict",
    "gpqa_diamond_cot_strict",
]


def _facts_rows(heading: str) -> dict[str, list[str]]:
    """Rows of the first markdown table after ``heading`` in FACTS.md, keyed by their first cell."""
    if not FACTS.exists():
        pytest.skip(f"{FACTS} is not present (the shared paper facts live beside the repository)")
    lines = FACTS.read_text(encoding="utf-8").split(heading, 1)[1].splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("|"))
    table = [line for line in itertools.takewhile(lambda line: line.startswith("|"), lines[start:])]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table[2:]]
    return {row[0]: row[1:] for row in rows}


def _number(cell: str) -> float:
    return float(re.match(r"[+−-]?[\d.]+", cell).group().replace("−", "-"))


@pytest.fixture(scope="module")
def seeds() -> dict:
    return {entry.name: entry for entry in load_submissions(REPO_SUBMISSIONS).entries}


def test_seeds_match_table_6(seeds: dict) -> None:
    for pair, cells in _facts_rows("### Table 6").items():
        if pair in SEED_NAMES:
            scores = seeds[SEED_NAMES[pair]].scores
            assert [scores[task].reported_delta for task in TABLE_6_TASKS] == [_number(c) for c in cells], (
                pair
            )


def test_seeds_match_table_2_and_its_derived_scores(seeds: dict) -> None:
    for label, cells in _facts_rows("Absolute IFEval scores for the six pairs").items():
        entry = seeds[SEED_NAMES[label.split(" (")[0]]]
        counts = entry.reported_regressions
        assert [counts.both_pass, counts.lost, counts.gained, counts.both_fail] == [int(c) for c in cells[:4]]
        ifeval = entry.scores["ifeval_strict"]
        assert (ifeval.reference_score, ifeval.vlm_score) == (_number(cells[5]), _number(cells[6]))
        assert ifeval.derived == ("reference_score", "vlm_score") and "[derived]" in ifeval.source


def test_seeds_match_s_per_reference_llm_and_table_1(seeds: dict) -> None:
    s_by_llm = {
        llm: _number(cells[0]) for llm, cells in _facts_rows("### Sink Strength per reference LLM").items()
    }
    # Table 1 spells "Qwen3-VL(-8B-Instruct)": the seeds' display names are the full names.
    table_1 = {
        re.sub(r"\((-[^)]*)\)", r"\1", pair).replace(" (non-headline control)", ""): cells
        for pair, cells in _facts_rows("### Table 1").items()
    }
    for name in SEED_NAMES.values():
        entry = seeds[name]
        assert entry.sink_strength == s_by_llm[entry.llm.display_name], name
        reference, recipe, qk_norm = table_1[entry.vlm.display_name]
        assert (entry.llm.display_name, entry.metadata.qk_norm) == (reference, qk_norm), name
        assert entry.metadata.vl_recipe == f"{recipe} (Table 1)", name
        assert "arXiv 2609.00746" in entry.metadata.citation.source
