"""The leaderboard site: :mod:`.content` (what pages show), :mod:`.views` (tables to content), :mod:`.pages`
(templates to Markdown), :mod:`.plots` (the board's charts), :mod:`.generate` (the generated files of one build),
:mod:`.experiment_pages` (the experiments' own pages), :mod:`.plugin` (the MkDocs plugin), :mod:`.project`
(``sinkbench site build`` and ``serve``).
"""
