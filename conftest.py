"""Project-wide test setup.

The bundled example agent is importable by the tests. And what in-process inner runs would
import again and again is imported once, up front: ``pytester.runpytest_inprocess`` forgets
every module an inner run imported when the run ends, so each run imported the plugin's
lazily loaded parts (the report, the audit trail, the viewer...) and the SDK resources its
agent used afresh: hundreds of runs, each paying for the same imports. Imported here, before
any inner run, they stay.

A user's process imports only what it uses, and when: that is pinned in subprocesses
(``tests/test_startup.py``, the command's tests), which this does not reach. Left out here is
the module whose presence is itself a signal: ``pytest_rollout.plugin.snapshot`` is imported
only when a test uses the rollout syrupy extension, and the plugin reads its presence so.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
from pathlib import Path
from typing import Final

import pytest_rollout

EXAMPLE_DIR = Path(__file__).resolve().parent / "examples" / "weather"
if str(EXAMPLE_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DIR))

#: Parts of the SDKs and plugins that the inner runs' agents load on first use.
LAZY_THIRD_PARTY: Final = (
    "openai.resources.chat",
    "openai.resources.responses",
    "openai.lib.streaming.chat",
    "openai.lib.streaming.responses",
    "anthropic.resources.messages",
    "anthropic.lib.streaming",
    "syrupy.extensions.single_file",
)


#: Modules not imported up front: the command's entry, and the syrupy extension's module.
_SIGNALS: Final = frozenset({"pytest_rollout.__main__", "pytest_rollout.plugin.snapshot"})


def _import_once() -> None:
    prefix = f"{pytest_rollout.__name__}."
    names = [m.name for m in pkgutil.walk_packages(pytest_rollout.__path__, prefix)]
    for name in [n for n in names if n not in _SIGNALS] + list(LAZY_THIRD_PARTY):
        # Without the test extra a module may not import: the tests that need it say so.
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


_import_once()
