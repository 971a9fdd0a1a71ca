"""``sink_strength``: Sink Strength S of a base LLM, measured by the sinkbench probe inside lm-eval."""
