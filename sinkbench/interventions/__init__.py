"""The paper's diagnosis and intervention experiments on a (reference LLM, VLM-LM) pair (arXiv 2609.00746,
Section 5 and Appendices D.3, D.4, F.1-F.4):

* :mod:`.displacement`: where the weights moved (per layer and projection, operator norm and relative Frobenius
  norm of the change; the ratio between two endpoints of one reference);
* :mod:`.random_control`: a Gaussian change of the same relative size in every projection (the D.4 control);
* :mod:`.ablation`: the top-K norm-scale channels of each layer set to the layer's channel mean (D.3);
* :mod:`.qk_norm`: per-head QK-RMSNorm with unit scales added to a backbone without it (F.3);
* :mod:`.merging`: the VLM-LM merged with its reference, the seven settings of F.4 on mergekit (optional extra
  ``sinkbench[merge]``), with :mod:`.spectral` adding TSV and STAR to mergekit's methods.

Each takes models as a spec, a folder or a :class:`~sinkbench.models.LoadedModel` and returns its numbers or a
model; each that makes models declares one :class:`~.checkpoint.Intervention`, which
:func:`~.checkpoint.write_intervention` writes as standard transformers checkpoints with the typed report beside
the weights. Nothing here imports lm-eval, the submissions or the site.
"""
