"""The sink-head map: per-(layer, head) statistics over every layer, the selection rules, and ``sinkbench heads``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny_models import CORPUS, save_tiny_model, tiny_causal_lm, tiny_tokenizer

from sinkbench.cli import main
from sinkbench.models import load_model
from sinkbench.sink.heads import HeadMap, head_map, select_heads, selection_rule
from sinkbench.sink.metrics import G_THRESHOLD, SHARE_G_ABOVE
from sinkbench.sink.options import ProbeOptions
from sinkbench.sink.prompts import load_prompts

LAYERS = 12  # deeper than the default window of 10 layers, so "every layer" is visible


@pytest.fixture(scope="module")
def deep_dir(tmp_path_factory):
    """A 12-layer tiny Llama saved with the tiny tokenizer."""
    return save_tiny_model(tmp_path_factory.mktemp("deep") / "model", "llama", layers=LAYERS)


def test_head_map_matches_the_observations():
    import torch

    from sinkbench.sink.observe import observe
    from sinkbench.sink.strength import layer_head_medians

    observations = observe(tiny_causal_lm("qwen3"), tiny_tokenizer(), CORPUS, ProbeOptions(num_layers=4))
    heads = head_map(observations)
    assert heads.layers == [0, 1, 2, 3] and heads.median_g.shape == (4, 4)
    np.testing.assert_array_equal(heads.median_g, layer_head_medians(observations))
    pooled = torch.cat([obs.g for obs in observations], dim=-1).double().numpy()
    layer, head = 2, 1
    kept = pooled[layer, head][~np.isnan(pooled[layer, head])]
    assert heads.share_g_above[layer, head] == pytest.approx(np.mean(kept > G_THRESHOLD))
    positions = [int(obs.sink_position[layer, head]) for obs in observations]
    dominant = max(set(positions), key=positions.count)
    assert heads.sink_position[layer, head] == dominant
    assert heads.sink_position_share[layer, head] == pytest.approx(positions.count(dominant) / len(positions))


def test_first_token_mode_puts_every_sink_at_position_0():
    from sinkbench.sink.observe import observe

    options = ProbeOptions(num_layers=4, sink_position="first")
    heads = head_map(observe(tiny_causal_lm("llama"), tiny_tokenizer(), CORPUS, options))
    assert (heads.sink_position == 0).all() and (heads.sink_position_share == 1.0).all()


def _synthetic() -> HeadMap:
    median = np.array([[3.0, np.nan, 1.0, 2.0], [2.0, -1.0, 0.5, 4.0]])
    share = np.array([[0.9, np.nan, 0.1, 0.4], [0.6, 0.0, 0.0, 0.95]])
    return HeadMap([6, 7], median, np.zeros((2, 4), dtype=int), np.ones((2, 4)), share)


def test_selection_rules_rank_by_median_g_and_break_ties_by_share():
    heads = _synthetic()
    assert select_heads(heads, selection_rule(top_frac=0.25)) == [[7, 3], [6, 0]]  # ceil(0.25 * 8) = 2
    assert select_heads(heads, selection_rule(top_frac=0.5)) == [[7, 3], [6, 0], [7, 0], [6, 3]]  # 2.0 tie
    assert select_heads(heads, selection_rule(min_g=2.0)) == [[7, 3], [6, 0], [7, 0], [6, 3]]
    assert select_heads(heads, selection_rule()) == [[7, 3]]  # default top 10%: ceil(0.8) = 1
    assert len(select_heads(heads, selection_rule(top_frac=1.0))) == 7  # the head without observations never


@pytest.mark.parametrize(
    ("rule", "message"),
    [({"top_frac": 0.1, "min_g": 1.0}, "not both"), ({"top_frac": 0.0}, r"top_frac must be in \(0, 1\]")],
)
def test_bad_selection_rules_are_clear_errors(rule, message):
    with pytest.raises(ValueError, match=message):
        selection_rule(**rule)


def test_cli_maps_every_layer_and_selects_the_top_fraction(deep_dir, tmp_path, capsys):
    output, plot = tmp_path / "heads.json", tmp_path / "heads.svg"
    arguments = ["heads", str(deep_dir), "--output", str(output), "--top-frac", "0.25", "--plot", str(plot)]
    assert main([*arguments, "--quiet"]) == 0
    report = json.loads(output.read_text())
    assert report["layers"] == list(range(LAYERS)) and report["num_heads"] == 4
    for key in ("median_g", "sink_position", "sink_position_share", SHARE_G_ABOVE.name):
        assert np.asarray(report[key], dtype=float).shape == (LAYERS, 4), key
    selection = report["selection"]
    assert selection["rule"] == "top_frac" and selection["value"] == 0.25 and selection["count"] == 12
    median = np.asarray(report["median_g"], dtype=float)
    chosen = [median[layer, head] for layer, head in selection["heads"]]
    assert chosen == sorted(chosen, reverse=True)
    rest = [median[k, h] for k in range(LAYERS) for h in range(4) if [k, h] not in selection["heads"]]
    assert min(chosen) >= max(rest)
    assert report["calibration_prompts"] and report["model"]["source"] == "dir"
    assert plot.read_text().startswith("<svg") and f"{selection['count']} sink heads" in plot.read_text()
    printed = capsys.readouterr().out
    assert "12 sink heads (top_frac = 0.25) of 12 layers x 4 heads" in printed


def test_cli_min_g_rule(deep_dir, tmp_path):
    from sinkbench.sink.observe import observe

    loaded = load_model(str(deep_dir))
    observations = observe(loaded.model, loaded.tokenizer, load_prompts(), ProbeOptions(num_layers=LAYERS))
    floor = float(np.median(head_map(observations).median_g))  # about half of the heads reach it
    output = tmp_path / "heads.json"
    assert main(["heads", str(deep_dir), "--output", str(output), "--min-g", str(floor), "--quiet"]) == 0
    report = json.loads(output.read_text())
    median = np.asarray(report["median_g"], dtype=float)
    expected = {(k, h) for k in range(LAYERS) for h in range(4) if median[k, h] >= floor}
    assert {tuple(pair) for pair in report["selection"]["heads"]} == expected
    assert 0 < len(expected) < LAYERS * 4
    assert report["selection"]["rule"] == "min_g" and report["selection"]["value"] == floor


def test_cli_refuses_two_rules(deep_dir, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["heads", str(deep_dir), "-o", str(tmp_path / "h.json"), "--top-frac", "0.1", "--min-g", "1"])
    assert exit_.value.code == 2
