"""The leaderboard site: views built from the aggregate tables only, pages rendered from the Jinja2 templates of
the top-level ``site/``, SVG charts, and the MkDocs plugin that makes them pages of the project.

:mod:`.content` (the dataclasses pages show), :mod:`.views` (tables to content), :mod:`.pages` (templates to
Markdown), :mod:`.plots` (the board's charts, declared in :mod:`sinkbench.charts`), :mod:`.generate` (the generated files
of one build), :mod:`.experiment_pages` (the experiments' own pages, published as they are), :mod:`.plugin`
(the MkDocs plugin), :mod:`.project` (``sinkbench site build`` and ``serve``).
"""
