"""The leaderboard site's sources: Jinja2 ``templates/`` and the ``docs/`` pages and assets.

This folder is the repository's top-level ``site/``; the wheel installs it as ``sinkbench.site`` (with
``mkdocs.yml`` beside it, as ``sinkbench/mkdocs.yml``), so an installed sinkbench builds the site too. Nothing
here is imported as code: the MkDocs side is the ``sinkbench`` plugin (:mod:`sinkbench.leaderboard.plugin`).
"""
