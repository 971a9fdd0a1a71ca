"""A miniature LLaVA fine-tuning testbed: does VL fine-tuning damage text skills, and does freezing the sink heads
protect them? Synthetic scenes and chats (:mod:`.scenes`, :mod:`.replies`, :mod:`.text_chats`), a small VLM around
a causal LM (:mod:`.vlm`) and its training stages (:mod:`.train`), the arms (:mod:`.controls`), the outcomes
(:mod:`.visual`, :mod:`.ifeval_short`, :mod:`.outcomes`, :mod:`.mechanism`), the results file (:mod:`.schema`),
the resumable run (:mod:`.experiment`, driven by :mod:`.run`), the statistics and verdicts (:mod:`.analysis`,
:mod:`.verdicts`), the mechanism pilot (:mod:`.pilot`) and the site's page (:mod:`.page`).
"""
