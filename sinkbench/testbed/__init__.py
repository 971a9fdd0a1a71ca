"""A miniature LLaVA fine-tuning testbed: synthetic scenes, a small VLM around a causal LM, its training stages,
the sink-head arms and their matched control, and the paired statistics (driven by ``benchmarks/vl_testbed.py``).

Modules: :mod:`.scenes` (images, captions, questions), :mod:`.vlm` (the LLaVA and its encoding), :mod:`.train`
(stages 0-2), :mod:`.controls` (the heads each arm freezes), :mod:`.visual` (accuracy on held-out scenes),
:mod:`.ifeval_short` (short-answer IFEval), :mod:`.experiment` (the resumable run), :mod:`.analysis` (statistics).
"""
