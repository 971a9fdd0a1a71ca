"""A miniature LLaVA fine-tuning testbed: synthetic scenes and VL chats with replies of every length, a small VLM
around a causal LM, its training stages, the arms (sink heads, their matched control, every query/key row, the LM
frozen as the positive control), the text-only control, outcomes that see a loss of any length, and the paired
statistics with their verdict rules (driven by :mod:`.run`; :mod:`.page` renders the site's page).

Modules: :mod:`.scenes` (images, captions, one-word questions), :mod:`.replies` (stage 2's reply formats),
:mod:`.text_chats` (GSM8K chats of the text-only control), :mod:`.vlm` (the LLaVA and its encoding), :mod:`.train`
(stages 0-2), :mod:`.controls` (the arms), :mod:`.visual` (accuracy on held-out scenes), :mod:`.ifeval_short`
(short-answer IFEval), :mod:`.outcomes` (the text outcomes), :mod:`.schema` (the results file, which the
page reads), :mod:`.experiment` (the resumable run), :mod:`.analysis` and :mod:`.verdicts` (statistics and verdicts),
:mod:`.mechanism` (each head's first-token attention before and after stage 2) and :mod:`.pilot` (the mechanism pilot:
which regime moves the sink).
"""
