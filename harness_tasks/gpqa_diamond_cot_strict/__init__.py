"""``gpqa_diamond_cot_strict``: zero-shot chain-of-thought GPQA Diamond over four options."""
