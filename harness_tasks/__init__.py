"""lm-evaluation-harness task families added by sinkbench: one folder per family (YAML, hooks, README)."""
