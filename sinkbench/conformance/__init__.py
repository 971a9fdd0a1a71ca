"""Conformance sweeps on tiny random models: the probe against the eager route for every causal-LM model type,
and ``extract-lm`` for every image-text-to-text type. ``python -m sinkbench.conformance --write`` regenerates the
architecture tables; ``tests/conformance/test_conformance.py`` reruns the sweeps and compares."""
