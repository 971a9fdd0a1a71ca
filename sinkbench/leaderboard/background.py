"""Do part of a site build alongside the rest: the charts and downloads in a second process while the pages render
(:func:`in_background`, :class:`SharedTasks`), and the site's static files written by threads while MkDocs renders
the pages (:class:`FileWriter`).

The charts (matplotlib's SVG takes seconds) and the table downloads need nothing the pages make, so on a machine with
a second core the two overlap, and whichever process finishes its own part first draws the charts still left.

The worker is forked: it starts at once with the build's data already in memory, and only its result (text) is
sent back. Where forking is not safe or not possible (another thread is running, as under ``mkdocs serve``; no
``fork`` on this platform; a single core), or the worker dies, the work is done in this process, with the same
result: a chart's SVG and a download depend on their data only.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def in_background(work: Callable[[], T]) -> Callable[[], T]:
    """Start ``work`` (in a forked worker where :func:`can_fork`); the returned function waits for its result and
    returns it (an exception ``work`` raised is raised there)."""
    if not can_fork():
        return work
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    worker = context.Process(target=_run, args=(work, writer), daemon=True)
    worker.start()
    writer.close()

    def result() -> T:
        try:
            succeeded, value = reader.recv()
        except (EOFError, OSError):  # the worker died (e.g. killed for memory): do the work here instead
            return work()
        finally:
            reader.close()
            worker.join()
        if not succeeded:
            raise value
        return value

    return result


class SharedTasks(Generic[T]):
    """Tasks that this process and a worker forked after it was made both work through, each taking the next one
    not yet taken from one counter in shared memory, so each task runs once and whichever process is free draws.

    Without shared memory (a platform that refuses it) each process keeps its own count and does every task: the
    same result, at twice the work."""

    def __init__(self, tasks: Sequence[Callable[[], T]]) -> None:
        self._tasks = list(tasks)
        try:
            self._next: Any = multiprocessing.Value("i", 0)
        except OSError:
            self._next = None
            self._local = 0

    def run(self) -> dict[int, T]:
        """Do tasks until none is left: their results by their position."""
        done: dict[int, T] = {}
        while (index := self._take()) < len(self._tasks):
            done[index] = self._tasks[index]()
        return done

    def _take(self) -> int:
        if self._next is None:
            self._local += 1
            return self._local - 1
        with self._next.get_lock():
            index = self._next.value
            self._next.value = index + 1
        return index


def _run(work: Callable[[], object], writer: Connection) -> None:
    """The worker: send ``(True, result)``, or ``(False, the exception)``."""
    try:
        outcome = (True, work())
    except Exception as error:  # handed to the parent, which raises it
        outcome = (False, error)
    writer.send(outcome)
    writer.close()


def can_fork() -> bool:
    """Whether a forked worker can run alongside: ``fork`` exists, this process runs one thread (forking a threaded
    process can copy a lock another thread holds), and it may use more than one core."""
    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cores) > 1


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
