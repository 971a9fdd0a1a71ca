"""The paper's diagnosis and intervention experiments on a (reference LLM, VLM-LM) pair (arXiv 2609.00746, Section 5,
Appendices D.3, D.4, F.1-F.4): :mod:`.displacement` (where the weights moved), :mod:`.random_control` (a Gaussian
change of the same size, D.4), :mod:`.ablation` (top-K norm-scale channels set to their mean, D.3), :mod:`.qk_norm`
(unit QK-RMSNorm added, F.3) and :mod:`.merging` (the seven merges of F.4 on mergekit, with :mod:`.spectral`).

Each takes models as a spec, a folder or a :class:`~sinkbench.models.LoadedModel`; each that makes models declares
one :class:`~.checkpoint.Intervention`, written by :func:`~.checkpoint.write_intervention` as transformers
checkpoints with the typed report beside the weights. Nothing here imports lm-eval, the submissions or the site.
"""
