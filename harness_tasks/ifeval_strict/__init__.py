"""``ifeval_strict``: IFEval graded by lm-eval's own instruction checkers."""
