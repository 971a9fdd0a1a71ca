"""The testbed's precision (experiments.vl_testbed.precision): the float32 recipe, and the refusal of a bfloat16 recipe
on a CPU without fast bfloat16."""

from __future__ import annotations

import pytest
from tiny_testbed import tiny_testbed_config

from sinkbench.errors import UserError


def test_the_float32_recipe_changes_every_stage_and_the_evaluation_and_nothing_else() -> None:
    from experiments.vl_testbed.precision import precision_of, with_precision

    config = tiny_testbed_config()
    assert precision_of(config) == "bfloat16"
    single = with_precision(config, "float32")
    assert precision_of(single) == "float32" and single.eval_dtype == "float32"
    assert not single.stage1.bf16 and not any(spec.bf16 for spec in single.doses.values())
    changed = {key for key, value in single.recipe().items() if value != config.recipe()[key]}
    assert changed == {
        "stage1",
        "doses",
        "eval_dtype",
    }  # so a float32 results file never resumes a bfloat16 one
    assert with_precision(single, "bfloat16").recipe() == config.recipe()
    with pytest.raises(ValueError, match="float16"):
        with_precision(config, "float16")


@pytest.mark.parametrize("slowdown", [1.2, 60.0])
def test_a_bfloat16_recipe_is_refused_only_where_bfloat16_is_slow(
    monkeypatch: pytest.MonkeyPatch, slowdown: float
) -> None:
    from experiments.vl_testbed import precision
    from experiments.vl_testbed.precision import check_precision, with_precision

    monkeypatch.setattr(precision, "bfloat16_slowdown", lambda: slowdown)
    config = tiny_testbed_config()
    if slowdown < precision.SLOW_FACTOR:
        check_precision(config, chosen=False)
        return
    with pytest.raises(UserError) as raised:
        check_precision(config, chosen=False)
    message = str(raised.value)
    assert "60x slower" in message and "--precision float32" in message and "\n" not in message
    check_precision(config, chosen=True)  # the user asked for bfloat16 anyway
    check_precision(with_precision(config, "float32"), chosen=False)  # nothing in bfloat16
    check_precision(config.model_copy(update={"device": "cuda"}), chosen=False)  # a GPU is not measured


def test_the_slowdown_is_a_ratio_of_two_timings_of_the_same_matmul() -> None:
    from experiments.vl_testbed import precision

    ratio = precision.bfloat16_slowdown(size=32, repeats=2)
    assert ratio > 0  # its value depends on the CPU; refusing is tested above with a fixed one
