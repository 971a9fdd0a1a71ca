"""lm-evaluation-harness task families added by sinkbench: one folder per family (YAML, hooks, README).

The repository's top-level ``harness_tasks/``; sinkbench installs it as ``sinkbench.tasks`` (see setup.py), the
name its hooks import it by.
"""
