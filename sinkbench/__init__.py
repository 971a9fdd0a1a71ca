"""sinkbench: screen LLM backbones by Sink Strength before turning them into VLMs."""

from __future__ import annotations

__version__ = "0.1.0"
