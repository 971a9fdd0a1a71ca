"""The aggregate tables built from validated entries: one module per table (:mod:`.pairs`, :mod:`.correlations`,
:mod:`.screening`, :mod:`.regressions`), the board's judgement rules (:mod:`.rules`), :mod:`.build` (all of them
together), :mod:`.write` (CSV and JSON), :mod:`.aggregate` (load, build, write) and :mod:`.placement`.
"""
