"""Conformance sweeps over the installed transformers registry: the probe against the eager route for every
causal-LM model type, and ``extract-lm`` for every image-text-to-text model type, on tiny random models.

``python -m sinkbench.conformance --write`` regenerates the architecture tables the site and the README link;
``tests/conformance/test_conformance.py`` runs the same sweeps and compares them with the committed tables.
"""
