"""The site's static files written by threads while MkDocs renders the pages (:class:`FileWriter`); the charts
render in a second process meanwhile (:class:`sinkbench.charts.Rendering`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class FileWriter:
    """Threads that write files while the build goes on: creating a file is kernel work (on a slow virtual disk
    about half a millisecond each, thousands per site), which they do on another core while the build's own
    thread renders pages. :meth:`wait` waits for every write and raises the first error."""

    def __init__(self, threads: int = 2) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="sinkbench-write")
        self._pending: list[Future[None]] = []

    def submit(self, write: Callable[[], None]) -> None:
        """Start ``write``."""
        self._pending.append(self._pool.submit(write))

    def wait(self) -> None:
        """Wait for every write (its threads end), raising the first one's error."""
        try:
            for future in self._pending:
                future.result()
        finally:
            self._pool.shutdown(wait=True)
            self._pending.clear()
