"""Compare states each figure's basis (who produced it, on which prompts) and says so when the two entries it shows
stand on different bases (sinkbench.leaderboard.compare.basis_notice); a pair names its reference LLM's family and
licence as that LLM's backbone page does."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinkbench.leaderboard.compare import Basis, CompareItem, ComparePage, Figure, basis_notice
from sinkbench.leaderboard.pages import PageRenderer, make_environment
from sinkbench.leaderboard.views import build_views
from sinkbench.submissions import load_valid_entries
from sinkbench.tables.build import build_tables

ROOT = Path(__file__).parents[2]
TESTBED = "pair:vl-testbed-smollm2-135m-seed0"
COUNTED = "pair:internvl3-8b"  # reported, with the paper's per-prompt IFEval counts
UNCOUNTED = "pair:ovis2-34b"  # reported, without them
SMOLLM2 = "backbone:huggingfacetb--smollm2-135m-instruct"


@pytest.fixture(scope="module")
def board():
    tables = build_tables(load_valid_entries(ROOT / "submissions"))
    return tables, build_views(tables)


@pytest.fixture(scope="module")
def items(board) -> dict[str, CompareItem]:
    return {item.id: item for item in ComparePage.of(board[1]).items}


def _figure(item: CompareItem, label: str) -> Figure:
    return next(figure for figure in item.figures if figure.label == label)


def test_every_number_of_a_quantity_states_its_basis(items: dict[str, CompareItem]) -> None:
    for item in items.values():
        for figure in item.figures:
            if figure.group and figure.text not in ("–", "no pair yet"):
                assert figure.source is not None and figure.source.text, (item.id, figure.label)


def test_each_basis_names_provenance_prompt_set_and_count(board, items: dict[str, CompareItem]) -> None:
    testbed = _figure(items[TESTBED], "IFEval: observed Δ").source
    assert (
        testbed.text.startswith("measured by sinkbench's VL testbed · ")
        and "128 of 541 documents" in testbed.text
    )
    counted = _figure(items[COUNTED], "IFEval: observed Δ").source
    assert counted.text.startswith("reported by arXiv 2609.00746") and "541 prompts" in counted.text
    assert counted.key == "reported by arXiv 2609.00746" and counted.note == "541 prompts"
    uncounted = _figure(items[UNCOUNTED], "IFEval: observed Δ").source
    assert "prompt count not stated" in uncounted.text and uncounted.key == counted.key and not uncounted.note
    own = _figure(items[SMOLLM2], "IFEval: own score").source
    assert own.text.startswith("measured by sinkbench · all 541 documents")
    fitted = [p for p in board[1].pairs if not p.testbed and p.delta("ifeval_strict") is not None]
    predicted = _figure(items[SMOLLM2], "IFEval: predicted Δ (fit on all pairs)").source
    assert predicted.text.startswith(f"fit of Δ on S over {len(fitted)} pairs (testbed pairs left out)")
    held = _figure(items[COUNTED], "IFEval: held-out predicted Δ (leave-one-pair-out)").source
    assert f"the other {len(fitted) - 1} of the board's {len(fitted)} pairs" in held.text
    assert _figure(items[TESTBED], "Sink Strength S (nats)").source.text.startswith(
        "measured by sinkbench · "
    )
    assert _figure(items[COUNTED], "Sink Strength S (nats)").source.text.startswith(
        "reported by arXiv 2609.00746"
    )


def test_the_notice_names_both_bases_where_they_differ(items: dict[str, CompareItem]) -> None:
    lines = {group: (first, second) for group, first, second in basis_notice(items[TESTBED], items[COUNTED])}
    assert set(lines) == {"Sink Strength S", "IFEval"}  # the other tasks: the testbed pair has none
    first, second = lines["IFEval"]
    assert first.startswith("observed Δ — measured by sinkbench's VL testbed") and "128 of 541" in first
    assert second == (
        "observed Δ (541 prompts), held-out predicted Δ (leave-one-pair-out) — reported by arXiv 2609.00746"
    )
    assert basis_notice(items[COUNTED], items[UNCOUNTED]) == []  # one publication's protocol
    assert basis_notice(items["backbone:qwen--qwen3-4b"], items["backbone:qwen--qwen3-8b"]) == []
    smollm2 = dict((group, rest) for group, *rest in basis_notice(items[SMOLLM2], items[TESTBED]))
    assert "own score — measured by sinkbench · all 541 documents" in smollm2["IFEval"][0]


@pytest.mark.parametrize(
    ("ours", "theirs", "differ"),
    [
        (["a"], ["a"], False),
        (["a"], ["b"], True),
        (["a", "b"], ["b", "a"], False),
        (["a", "b"], ["a"], True),
        ([], ["b"], False),  # shown by one entry only: nothing side by side
    ],
)
def test_the_notice_rule_on_planted_bases(ours: list[str], theirs: list[str], differ: bool) -> None:
    def item(name: str, keys: list[str]) -> CompareItem:
        figures = [
            Figure(f"T: row {n}", "1.0", group="T", source=Basis(key, key)) for n, key in enumerate(keys)
        ]
        return CompareItem(name, "pair", name, "", [Figure("QK-norm", "none"), *figures])

    lines = basis_notice(item("A", ours), item("B", theirs))
    assert bool(lines) is differ
    if differ:
        assert lines[0][0] == "T" and all(key in lines[0][1] for key in ours)


def test_the_page_and_its_data_carry_bases_and_the_notice(board, items: dict[str, CompareItem]) -> None:
    tables, views = board
    page = ComparePage([items[TESTBED], items[COUNTED]])
    renderer = PageRenderer(make_environment(ROOT / "site" / "templates"), ROOT / "site" / "docs")
    html = renderer.pages(views, tables, page, updated="today")["compare.md"]
    notice = html[
        html.index("data-sb-compare-notice") : html.index("</ul>", html.index("data-sb-compare-notice"))
    ]
    assert not notice.split(">", 1)[0].endswith("hidden") and "128 of 541 documents" in notice
    assert html.count('class="sb-muted sb-basis"') == sum(
        figure.source is not None for item in page.shown for figure in item.figures
    )
    assert page.shown is page.shown  # found once per page, not once per item of its two pickers
    quiet = renderer.pages(views, tables, ComparePage([items[COUNTED], items[UNCOUNTED]]), updated="today")
    assert "data-sb-compare-notice hidden" in quiet["compare.md"]
    data = page.script()
    assert '"bases":[[' in data and "128 of 541 documents" in data


def test_a_pair_names_its_reference_llm_as_its_backbone_page_does(board) -> None:
    views = board[1]
    backbones = {backbone.slug: backbone for backbone in views.backbones}
    for pair in views.pairs:
        model = backbones[pair.reference_slug].model
        assert pair.reference.family or not model.family, (
            pair.slug
        )  # not recorded only where neither records it
        assert pair.reference.license or not model.license, pair.slug
    testbed = next(pair for pair in views.pairs if pair.testbed)
    assert (testbed.reference.family, testbed.reference.license) == ("SmolLM2", "Apache-2.0")
