"""Sink Strength: the probe (:mod:`.attention`, run over prompts by :mod:`.observe`), S from its observations
(:mod:`.strength`, :mod:`.metrics`, torch-free like :mod:`.options`), one model's report (:mod:`.probe_model`,
:mod:`.report`), the naive eager-attention check (:mod:`.naive`) and the pair margin (:mod:`.margin`).
"""
