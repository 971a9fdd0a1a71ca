"""lm-eval output folders as its ``vllm`` backend and ``accelerate launch -m lm_eval`` write them, made from a real
``--model hf`` run folder (neither can run here: vLLM needs a GPU, and lm-eval's ``hf`` backend splits data over
processes only when there are GPUs).

What differs, read from lm-eval 0.4.13's source:

* ``--model vllm`` (``lm_eval/evaluator.py``, ``models/vllm_causallms.py``, ``loggers/evaluation_tracker.py``):
  ``config.model`` and ``model_source`` are ``vllm``; ``config.model_args`` holds vLLM's own arguments
  (``tensor_parallel_size``, ``data_parallel_size``, ...) as the command line parsed them, and each task's
  ``configs.<task>.metadata`` receives them too (``TaskManager(metadata=model_args | metadata)``); the wrapper has
  no ``get_model_info``, so ``model_num_parameters``, ``model_dtype``, ``model_revision`` and ``model_sha`` are
  absent, and no ``batch_sizes`` (``[]``). Samples files are unchanged.
* ``accelerate launch`` (``evaluator.evaluate``): the results file is an ``hf`` one (lm-eval records neither the
  launcher nor the world size; ``--device`` is usually left out, so ``config.device`` is null). Each samples file
  lists rank 0's documents, then rank 1's (documents ``rank, rank + W, ...``). A rank with fewer requests runs
  its last request of the request type again, so that request's ``resps`` holds two answers; lm-eval does this
  once per request type, :func:`as_accelerate` in every task whose documents do not divide evenly.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: What ``HFLM.get_model_info`` adds to ``config``.
HF_MODEL_INFO = ("model_num_parameters", "model_dtype", "model_revision", "model_sha")


def edit_results(
    folder: Path, edit: Callable[[dict[str, Any]], None], *, unless_task: str | None = None
) -> None:
    """Apply ``edit`` to every results file below ``folder`` (but those that hold ``unless_task``)."""
    for path in folder.rglob("results_*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if unless_task is None or unless_task not in data["results"]:
            edit(data)
            path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def as_vllm(run: Path, out: Path, vllm_args: dict[str, Any], *, as_string: bool = False) -> Path:
    """Copy ``run`` to ``out`` as ``lm_eval --model vllm --model_args pretrained=...,<vllm_args>`` writes it.

    Results files holding ``sink_strength`` stay as they are (S comes from an ``hf`` run in the same folder).
    ``as_string`` records ``model_args`` as the command-line string, as lm-eval versions before the 0.4.13 command
    line did.
    """
    shutil.copytree(run, out)

    def edit(data: dict[str, Any]) -> None:
        config = data["config"]
        args = {**config["model_args"], **vllm_args}
        config["model"] = data["model_source"] = "vllm"
        config["model_args"] = (
            ",".join(f"{key}={value}" for key, value in args.items()) if as_string else args
        )
        config["batch_sizes"] = []
        for key in HF_MODEL_INFO:
            config.pop(key, None)
        for task in data["configs"].values():
            task["metadata"] = {**task.get("metadata", {}), **vllm_args}

    edit_results(out, edit, unless_task="sink_strength")
    return out


def as_accelerate(run: Path, out: Path, *, world_size: int = 2) -> Path:
    """Copy ``run`` to ``out`` as ``accelerate launch --num_processes WORLD_SIZE -m lm_eval --model hf`` writes it."""
    shutil.copytree(run, out)
    edit_results(out, lambda data: data["config"].update(device=None))
    for path in out.rglob("samples_*.jsonl"):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        shares = [lines[rank::world_size] for rank in range(world_size)]
        short = [share for share in shares if share and len(share) < len(shares[0])]
        if short:  # the padded request answers twice (greedy decoding: the same text)
            last = short[-1][-1]
            last["resps"] = [[*resps, resps[-1]] for resps in last["resps"]]
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for share in shares for line in share)
        path.write_text(text, encoding="utf-8")
    return out
