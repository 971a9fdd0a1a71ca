"""A hub id with the Hugging Face Hub out of reach: one whole line within seconds (not half a minute of retries and
a message cut mid-URL), naming the fixes; a cached model still loads, and ``HF_HUB_OFFLINE=1`` still works."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants

from sinkbench import models
from sinkbench.errors import UserError

#: Nothing listens on the discard port of the loopback address: every connection is refused at once.
UNREACHABLE = "http://127.0.0.1:9"


def _screen(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("HF_", "HUGGINGFACE_"))
    }
    environment.update(HF_HUB_CACHE=str(tmp_path / "hub"), HF_ENDPOINT=UNREACHABLE, **env)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sinkbench", "screen", "nonexistent/model"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, time.monotonic() - started


@pytest.mark.slow  # a fresh interpreter
def test_an_unreachable_hub_is_one_whole_line_within_seconds(tmp_path: Path) -> None:
    done, seconds = _screen(tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"sinkbench screen: MODEL nonexistent/model: the Hugging Face Hub ({UNREACHABLE}) cannot be reached and "
        f"the model is not in the Hub cache ({tmp_path / 'hub'}); pass a local model folder or a .gguf file, or "
        "download the model where the Hub is reachable (then it loads from the cache, with HF_HUB_OFFLINE=1 too)\n"
    )
    assert seconds < 10, f"{seconds:.1f} s"


@pytest.mark.slow  # a fresh interpreter
def test_offline_mode_without_the_model_cached_is_one_whole_line(tmp_path: Path) -> None:
    done, seconds = _screen(tmp_path, HF_HUB_OFFLINE="1")
    assert done.returncode == 1
    assert done.stderr == (
        f"sinkbench screen: MODEL nonexistent/model: HF_HUB_OFFLINE is set and the model is not in the Hub cache "
        f"({tmp_path / 'hub'}); pass a local model folder or a .gguf file, or download the model where the Hub is "
        "reachable\n"
    )
    assert seconds < 10, f"{seconds:.1f} s"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """An empty Hub cache under ``tmp_path``, offline mode off, and no remembered answer of the Hub."""
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    answers = models._hub_answers
    answers.cache_clear()
    yield tmp_path / "hub"
    answers.cache_clear()


def _cache(hub: Path, repo_id: str) -> None:
    """The Hub cache's layout for one model at one revision: ``models--ORG--NAME/snapshots/SHA/config.json``."""
    snapshot = hub / f"models--{repo_id.replace('/', '--')}" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    (hub / f"models--{repo_id.replace('/', '--')}" / "refs").mkdir()
    (hub / f"models--{repo_id.replace('/', '--')}" / "refs" / "main").write_text("a" * 40, encoding="utf-8")


def test_a_cached_model_loads_from_the_cache_when_the_hub_is_unreachable(hub: Path, monkeypatch) -> None:
    monkeypatch.setattr(constants, "ENDPOINT", UNREACHABLE)
    _cache(hub, "org/cached")
    assert models.hub_access("org/cached") == {"local_files_only": True}
    assert models.hub_access("org/cached", revision="main") == {"local_files_only": True}
    with pytest.raises(UserError, match=r"MODEL org/other: the Hugging Face Hub .* cannot be reached"):
        models.hub_access("org/other")


def test_offline_mode_with_the_model_cached_asks_nothing(hub: Path, monkeypatch) -> None:
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(models, "_hub_answers", lambda endpoint: pytest.fail("asked the Hub in offline mode"))
    _cache(hub, "org/cached")
    assert models.hub_access("org/cached") == {}


class _Answer(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(404)  # any answer means the Hub is there
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_hub_that_answers_loads_as_transformers_does(hub: Path, monkeypatch) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        assert models.hub_access("org/not-cached") == {}
    finally:
        server.shutdown()
