"""Everything that touches lm-evaluation-harness's API: the ``sink_strength`` request type that every lm-eval
model wrapper answers (:mod:`.request`), and running lm-eval's command line with sinkbench's tasks
(:mod:`.run`). The task definitions themselves live in the top-level ``harness_tasks/`` folder,
installed as ``sinkbench.tasks``."""
