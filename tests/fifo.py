"""Calling code that must not block on a FIFO, without letting it hang the suite."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def beside_fifo(fifo: Path, fn: Callable[[], T]) -> T | BaseException:
    """What ``fn()`` returns, or the exception it raises, run in a thread. If it is still
    running after 20 s (stuck opening or reading ``fifo``), a writer opened on ``fifo`` lets
    it go and the test fails."""
    outcome: list[T | BaseException] = []

    def run() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # handed back to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(20)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(20)
        pytest.fail(f"blocked on the FIFO {fifo}")
    return outcome[0]
