"""The leaderboard site's sources: Jinja2 ``templates/``, the ``docs/`` pages and assets, and the MkDocs hooks.

This folder is the repository's top-level ``site/``; the wheel installs it as ``sinkbench.site`` (with
``mkdocs.yml`` beside it, as ``sinkbench/mkdocs.yml``), so an installed sinkbench builds the site too. Nothing
here is imported as code: MkDocs loads ``mkdocs_hooks.py`` by path.
"""
