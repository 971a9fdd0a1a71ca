"""``eq_bench_strict``: EQ-Bench v2.1 graded by its score-block parser."""
