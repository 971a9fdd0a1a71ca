"""Sink Strength: the probe (an attention function), observations, S and its one metric spec, the screen
report, the naive eager-attention check, and the pair margin.

:mod:`.options` and :mod:`.metrics` are torch-free (the command line imports them); :mod:`.attention`
records what S needs inside each layer, :mod:`.observe` runs it over prompts, :mod:`.strength` turns
observations into S, :mod:`.probe_model` and :mod:`.report` make one model's report, :mod:`.naive` computes the
same from materialised eager attention, :mod:`.margin` compares a reference LLM with its VLM-LM.
"""
