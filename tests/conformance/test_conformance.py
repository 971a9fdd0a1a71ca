"""The conformance sweeps over the installed transformers registry, against the committed architecture tables.

Every causal-LM model type is built as a tiny random model and either measured (probe equal to the eager route)
or refused in one line; every image-text-to-text model type is extracted with ``--verify`` or refused. The
committed tables (``sinkbench/conformance/architectures.json`` and ``site/docs/architectures.md``) must say
what the sweep finds, so a transformers release that changes an attention shows up as a failing diff:
regenerate them with ``python -m sinkbench.conformance --write`` and review the change.
"""

from __future__ import annotations

import pytest

from sinkbench.conformance import table
from sinkbench.conformance.support import support
from sinkbench.conformance.verdicts import EQUAL, EQUAL_LOGITS_ONLY, FAILED, REFUSED
from sinkbench.extract import vlm_model_types

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def swept() -> dict:
    """Both sweeps over the whole registry (several minutes on two cores)."""
    from sinkbench.conformance.__main__ import run

    return run()[0]


@pytest.mark.parametrize("section", ["probe", "extract"])
def test_no_model_type_disagrees_or_breaks_the_sweep(swept, section: str) -> None:
    failed = {name: row["reason"] for name, row in swept[section].items() if row["verdict"] == FAILED}
    assert failed == {}
    for name, row in swept[section].items():
        if row["verdict"] in (EQUAL, EQUAL_LOGITS_ONLY):
            assert row["logits_difference"] <= 1e-4, name
        if row["verdict"] == EQUAL:
            assert max(row.get("s_difference", 0.0), row.get("profile_difference", 0.0)) <= 1e-4, name
        if row["verdict"] == REFUSED:
            assert row["reason"] and "\n" not in row["reason"], name


@pytest.mark.parametrize("section", ["probe", "extract"])
def test_the_committed_table_is_what_the_sweep_finds(swept, section: str) -> None:
    import transformers

    committed = table.load()
    if committed["transformers"] != transformers.__version__:
        pytest.skip(
            f"the table was swept on transformers {committed['transformers']}, this is {transformers.__version__}: "
            "run python -m sinkbench.conformance --write and review the diff"
        )
    verdicts = {name: (row["verdict"], row["reason"]) for name, row in swept[section].items()}
    assert verdicts == {name: (row["verdict"], row["reason"]) for name, row in committed[section].items()}


def test_the_committed_page_renders_the_committed_table() -> None:
    assert table.TABLE_PAGE.read_text(encoding="utf-8") == table.to_markdown(table.load())


def test_the_committed_encoder_types_are_what_transformers_names_say() -> None:
    committed = table.load()
    found = table.encoder_types(list(committed["probe"]))
    assert committed["encoder_types"] == found
    assert {"bert", "camembert", "roberta"} <= set(found["encoder"]) and "bart" in found["encoder_decoder"]
    assert not {"llama", "qwen3", "gemma3_text"} & {*found["encoder"], *found["encoder_decoder"]}


def test_every_registered_type_has_a_row() -> None:
    from sinkbench.conformance.probe import causal_lm_types

    committed = table.load()
    assert sorted(committed["probe"]) == causal_lm_types()
    assert sorted(committed["extract"]) == vlm_model_types()


@pytest.mark.parametrize(
    ("model_type", "section"),
    [
        ("qwen3_moe", "probe"),
        ("olmo3", "probe"),
        ("olmoe", "probe"),
        ("gemma2", "probe"),
        ("gpt_oss", "probe"),
        ("deepseek_v3", "probe"),
        ("qwen3_next", "probe"),
        ("llama4_text", "probe"),
        ("qwen3_vl_moe", "extract"),
        ("llava_onevision", "extract"),
        ("llama4", "extract"),
        ("glm4v", "extract"),
        ("ovis2", "extract"),
        ("molmo2", "extract"),
    ],
)
def test_the_families_the_issue_names_are_accepted(model_type: str, section: str) -> None:
    assert support(model_type, section).accepted is True


def test_what_cannot_be_re_measured_says_why() -> None:
    mllama = support("mllama", "extract")
    assert mllama.accepted is False and "has no standalone *ForCausalLM class" in mllama.text
    remote = support("minicpmv", "extract")
    assert remote.accepted is False and "exists only as remote code" in remote.text
    original = support("llava", "extract", "LlavaQwenForCausalLM")
    assert original.accepted is False and "llava-hf/llava-onevision-qwen2-7b-ov-hf" in original.text
    assert support(None, "probe").accepted is None


def test_write_with_types_is_refused_before_any_sweep(capsys) -> None:
    from sinkbench.conformance.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--write", "--types", "llava"])
    assert exit_info.value.code == 2
    assert "argument --types: not allowed with argument --write" in capsys.readouterr().err
