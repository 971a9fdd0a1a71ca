"""Everything that touches lm-evaluation-harness's API: the ``sink_strength`` request type (:mod:`.request`) and
running lm-eval with sinkbench's tasks (:mod:`.run`); the tasks live in ``harness_tasks/`` (``sinkbench.tasks``)."""
