"""The training monitor: S logged through the Trainer at the right steps, training left exactly as it was."""

from __future__ import annotations

import datetime
import json
import logging
import os
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tiny_models import CORPUS, tiny_causal_lm, tiny_tokenizer
from tiny_vlms import FAMILY_TYPES, save_tiny_vlm

from sinkbench.models import load_model
from sinkbench.sink.metrics import POSITION0_MASS, SHARE_G_ABOVE, SINK_STRENGTH
from sinkbench.sink.options import ProbeOptions

if TYPE_CHECKING:
    import torch
    from transformers import Trainer

PROMPTS = CORPUS[:2]
OPTIONS = ProbeOptions(num_layers=2)


def dropout_llama() -> torch.nn.Module:
    """A tiny Llama with attention dropout, so that training draws random numbers every step."""
    model = tiny_causal_lm("llama")
    for layer in model.model.layers:
        layer.self_attn.attention_dropout = 0.1
    return model


def _train(tmp_path, callback: bool, **callback_options) -> Trainer:
    from tiny_training import make_trainer

    from sinkbench.monitor import SinkStrengthCallback

    trainer = make_trainer(dropout_llama(), tmp_path)
    if callback:
        options = {"every_n_steps": 2, "prompts": PROMPTS, "options": OPTIONS, **callback_options}
        trainer.add_callback(SinkStrengthCallback(trainer, tokenizer=tiny_tokenizer(), **options))
    trainer.train()
    return trainer


def _losses(trainer: Trainer) -> list[tuple[int, float]]:
    return [(entry["step"], entry["loss"]) for entry in trainer.state.log_history if "loss" in entry]


def test_callback_logs_at_step_0_and_every_n_steps_without_changing_training(tmp_path):
    from sinkbench.monitor import STRENGTH_KEY

    trace = tmp_path / "trace" / "sink.jsonl"
    monitored = _train(tmp_path / "a", callback=True, trace_path=trace)
    plain = _train(tmp_path / "b", callback=False)
    logged = [entry for entry in monitored.state.log_history if STRENGTH_KEY in entry]
    assert [entry["step"] for entry in logged] == [0, 2, 4, 6]
    assert _losses(monitored) == _losses(plain)  # bit-identical, every step
    assert [step for step, _ in _losses(monitored)] == [1, 2, 3, 4, 5, 6]
    keys = {STRENGTH_KEY, f"sink/{SHARE_G_ABOVE.name}", f"sink/{POSITION0_MASS.name}"}
    keys |= {"sink/median_g/layer_2", "sink/median_g/layer_3"}
    assert keys <= set(logged[0])
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 2, 4, 6]
    assert [line[SINK_STRENGTH.name] for line in lines] == [entry[STRENGTH_KEY] for entry in logged]
    assert lines[0]["layers"] == [2, 3] and lines[0]["alerts"] == []


def test_logged_s_is_the_s_of_the_model_at_that_step(tmp_path):
    from sinkbench.monitor import STRENGTH_KEY
    from sinkbench.sink.observe import measure

    trainer = _train(tmp_path, callback=True)
    expected, _ = measure(trainer.model, tiny_tokenizer(), PROMPTS, OPTIONS)
    final = [entry for entry in trainer.state.log_history if STRENGTH_KEY in entry][-1]
    assert final[STRENGTH_KEY] == pytest.approx(expected.sink_strength, abs=1e-6)
    assert final[f"sink/{SHARE_G_ABOVE.name}"] == pytest.approx(expected.share_g_above, abs=1e-9)


def test_stop_below_stops_training_and_warns(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="sinkbench.monitor"):
        trainer = _train(tmp_path, callback=True, stop_below=100.0)
    assert trainer.state.global_step == 1  # flagged at step 0; the Trainer checks the flag after each step
    assert "stop_below" in caplog.text


def _state(model: torch.nn.Module) -> dict:
    import torch

    return {
        "modes": [module.training for module in model.modules()],
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "grads": [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        "attention": model.config._attn_implementation,
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": np.random.get_state()[1].copy(),
    }


def test_measure_restores_modes_gradients_attention_and_random_state():
    import torch

    from sinkbench.monitor import SinkMonitor

    model = dropout_llama().train()
    model.model.layers[1].eval()  # a mixed state must come back exactly
    model.model.embed_tokens.weight.requires_grad_(False)
    model(input_ids=torch.tensor([[1, 5, 6, 7]]), labels=torch.tensor([[1, 5, 6, 7]])).loss.backward()
    torch.manual_seed(3), random.seed(3), np.random.seed(3)
    before = _state(model)
    SinkMonitor(model, tiny_tokenizer(), PROMPTS, OPTIONS).measure(0)
    after = _state(model)
    assert after["modes"] == before["modes"] and after["requires_grad"] == before["requires_grad"]
    assert after["attention"] == before["attention"] == "sdpa"
    assert all(
        (a is None and b is None) or torch.equal(a, b)
        for a, b in zip(after["grads"], before["grads"], strict=True)
    )
    assert torch.equal(after["torch"], before["torch"]) and after["python"] == before["python"]
    assert np.array_equal(after["numpy"], before["numpy"])


def test_the_census_runs_once_when_the_monitor_is_made_not_at_every_measurement(monkeypatch):
    import sinkbench.monitor
    import sinkbench.sink.observe
    from sinkbench.monitor import SinkMonitor

    calls = []
    census = sinkbench.monitor.attention_layout

    def counted(*args, **kwargs):
        calls.append(1)
        return census(*args, **kwargs)

    monkeypatch.setattr(sinkbench.monitor, "attention_layout", counted)
    monkeypatch.setattr(sinkbench.sink.observe, "attention_layout", counted)
    monitor = SinkMonitor(tiny_causal_lm("llama"), tiny_tokenizer(), PROMPTS, OPTIONS)
    first, second = monitor.measure(0), monitor.measure(1)
    assert len(calls) == 1
    assert first.summary.sink_strength == second.summary.sink_strength


def test_thresholds_warn_on_floor_and_drop_and_stop_on_stop_below():
    from sinkbench.monitor import Thresholds

    thresholds = Thresholds(warn_below=0.5, stop_below=0.2, max_drop=0.3)
    assert thresholds.check(1.0, 1.0) == ([], False)
    alerts, stop = thresholds.check(0.4, 1.0)
    assert not stop and len(alerts) == 2 and "warn_below" in alerts[0] and "max_drop" in alerts[1]
    alerts, stop = thresholds.check(0.1, 0.2)
    assert stop and len(alerts) == 2 and "stop_below" in alerts[1]


def test_max_drop_is_measured_from_the_first_measurement(caplog):
    import torch

    from sinkbench.monitor import SinkMonitor, Thresholds

    model = tiny_causal_lm("llama")
    monitor = SinkMonitor(model, tiny_tokenizer(), PROMPTS, OPTIONS, thresholds=Thresholds(max_drop=0.0))
    monitor.measure(0)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(0.0)  # uniform attention: S falls
    with caplog.at_level(logging.WARNING, logger="sinkbench.monitor"):
        second = monitor.measure(10)
    assert second.summary.sink_strength < monitor.history[0].summary.sink_strength
    assert len(second.alerts) == 1 and "max_drop" in caplog.text and not monitor.should_stop


@pytest.mark.parametrize("model_type", FAMILY_TYPES)
def test_vlm_is_measured_on_its_language_model(model_type, tmp_path):
    import torch
    from transformers import AutoModelForImageTextToText

    from sinkbench.extract import extract_lm
    from sinkbench.monitor import SinkMonitor
    from sinkbench.sink.observe import measure

    source = save_tiny_vlm(tmp_path / "vlm", model_type)
    extract_lm(str(source), tmp_path / "lm")
    vlm = AutoModelForImageTextToText.from_pretrained(source, dtype=torch.float32)
    reference, _ = measure(load_model(str(tmp_path / "lm")).model, tiny_tokenizer(), PROMPTS, OPTIONS)
    measured = SinkMonitor(vlm, tiny_tokenizer(), PROMPTS, OPTIONS).measure(0)
    assert measured.summary.sink_strength == pytest.approx(reference.sink_strength, abs=1e-5)
    assert measured.summary.layers == reference.layers == [1, 2]
    assert vlm.config.get_text_config()._attn_implementation == "sdpa"


def test_callback_on_a_llava_trainer(tmp_path):
    from tiny_training import make_trainer
    from transformers import AutoModelForImageTextToText

    from sinkbench.monitor import STRENGTH_KEY, SinkStrengthCallback

    vlm = AutoModelForImageTextToText.from_pretrained(save_tiny_vlm(tmp_path / "vlm", "llava"))
    trainer = make_trainer(vlm, tmp_path, steps=2)
    trainer.add_callback(
        SinkStrengthCallback(
            trainer, every_n_steps=1, prompts=PROMPTS, options=OPTIONS, tokenizer=tiny_tokenizer()
        )
    )
    trainer.train()
    assert [e["step"] for e in trainer.state.log_history if STRENGTH_KEY in e] == [0, 1, 2]


def test_sharded_parameters_are_refused(tmp_path):
    from tiny_training import make_trainer

    from sinkbench.monitor import SinkMonitor, SinkStrengthCallback

    model = tiny_causal_lm("llama")
    model.model.layers[
        0
    ].mlp.up_proj.weight.ds_id = 7  # what DeepSpeed ZeRO-3 puts on a partitioned parameter
    with pytest.raises(ValueError, match="ZeRO-3"):
        SinkMonitor(model, tiny_tokenizer(), PROMPTS, OPTIONS)
    trainer = make_trainer(tiny_causal_lm("llama"), tmp_path)
    trainer.is_fsdp_enabled = True
    with pytest.raises(ValueError, match="FSDP"):
        SinkStrengthCallback(trainer, tokenizer=tiny_tokenizer())


def test_unsupported_models_and_bad_intervals_are_clear_errors(tmp_path):
    from tiny_training import make_trainer
    from transformers import MambaConfig, MambaForCausalLM

    from sinkbench.errors import ModelNotSupported
    from sinkbench.monitor import SinkMonitor, SinkStrengthCallback

    mamba = MambaForCausalLM(MambaConfig(num_hidden_layers=1, hidden_size=16, state_size=4, vocab_size=300))
    with pytest.raises(ModelNotSupported, match=r"model type 'mamba': it has no softmax attention layers"):
        SinkMonitor(mamba, tiny_tokenizer(), PROMPTS, OPTIONS)
    with pytest.raises(ValueError, match="every_n_steps"):
        SinkStrengthCallback(make_trainer(tiny_causal_lm("llama"), tmp_path), every_n_steps=0)
    with pytest.raises(ValueError, match="needs a tokenizer"):
        SinkStrengthCallback(make_trainer(tiny_causal_lm("llama"), tmp_path))


#: Seconds any collective of the DDP test may wait, and the whole group may take, before the test gives up.
DDP_TIMEOUT = 120


def _ddp_worker(rank: int, port: int, out: Path) -> None:
    """One process of a 2-process DDP group (gloo, CPU): every process calls measure at the same step.

    It leaves with ``os._exit`` once both have written their results, without ``destroy_process_group`` or the
    interpreter's exit: both can block in gloo's threads (seen on a loaded 2-core machine: a futex wait of more
    than ten minutes after the results were written).
    """
    import torch

    from sinkbench.monitor import SinkMonitor, Thresholds

    torch.distributed.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=2,
        timeout=datetime.timedelta(seconds=DDP_TIMEOUT),
    )
    model = torch.nn.parallel.DistributedDataParallel(tiny_causal_lm("llama"))
    monitor = SinkMonitor(model, tiny_tokenizer(), PROMPTS, OPTIONS, thresholds=Thresholds(stop_below=100.0))
    measurement = monitor.measure(0)
    strength = None if measurement is None else measurement.summary.sink_strength
    (out / f"rank{rank}.json").write_text(json.dumps([strength, monitor.should_stop]))
    torch.distributed.barrier()  # the other process has finished its collectives too
    os._exit(0)


@pytest.mark.slow  # spawns a process group of fresh interpreters
def test_under_ddp_the_main_process_measures_and_every_process_stops(tmp_path):
    import socket

    import torch.multiprocessing as mp

    from sinkbench.sink.observe import measure

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    group = mp.start_processes(
        _ddp_worker, args=(port, tmp_path), nprocs=2, start_method="spawn", join=False
    )  # spawn: fork can deadlock
    deadline = time.monotonic() + 2 * DDP_TIMEOUT
    try:
        while not group.join(timeout=1):
            assert time.monotonic() < deadline, "the DDP group did not finish"
    finally:
        for process in group.processes:
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
    expected, _ = measure(tiny_causal_lm("llama"), tiny_tokenizer(), PROMPTS, OPTIONS)
    strength, stop = json.loads((tmp_path / "rank0.json").read_text())
    assert strength == pytest.approx(expected.sink_strength, abs=1e-6) and stop is True
    assert json.loads((tmp_path / "rank1.json").read_text()) == [None, True]
