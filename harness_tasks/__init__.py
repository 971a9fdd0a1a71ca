"""lm-evaluation-harness task families added by sinkbench, one folder each (YAML, hooks, README); installed as
``sinkbench.tasks`` (setup.py), the name its hooks import it by."""
