"""Statistics and the aggregate tables built from validated entries, and the one writer of their files.

:mod:`.stats` (pure estimators), one module per table (:mod:`.pairs`, :mod:`.correlations`,
:mod:`.screening`, :mod:`.regressions`), :mod:`.build` (all of them together), :mod:`.write` (CSV and JSON),
:mod:`.aggregate` (load, build, write).
"""
