"""The leaderboard site: views built from the aggregate tables only, pages rendered from the Jinja2 templates
shipped here, SVG charts, entry pages, and the MkDocs Material build.

:mod:`.content` (the dataclasses pages show), :mod:`.views` (tables to content), :mod:`.pages` (templates to
Markdown), :mod:`.plots` (charts; heatmaps by :mod:`sinkbench.svg_heatmap`), :mod:`.entry_pages` (one page per entry),
:mod:`.build` (the whole build, published atomically), :mod:`.mkdocs_hooks` (loaded by MkDocs itself).
"""
