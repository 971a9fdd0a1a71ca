"""``gsm8k_cot_strict``: zero-shot chain-of-thought GSM8K with strict and flexible extraction."""
