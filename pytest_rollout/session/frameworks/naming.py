"""Which framework agent is acting: each framework's resolver, asked by the run's recorder
when no ``rollout.agent()`` block names one (session/acting.py, docs/frameworks.md).

A framework's resolver is added to a run when the test hands the plugin its tools or makes
a model client, if the framework is imported by then: nothing is imported here, and a run
of a test that uses no framework asks nobody. Each resolver reads what its framework keeps
current (a span, a config, a run context) and is cheap; outside its framework's runs it
answers ``None``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Final

from ...format.recorder import Recorder
from ..acting import agents_of

__all__ = ["name_framework_agents"]

#: The framework modules that can say who is acting, by the package that tells whether the
#: framework is imported.
_RESOLVERS: Final = (
    ("agents", ".agents_sdk"),
    ("langchain_core", ".langchain"),
    ("pydantic_ai", ".pydantic_ai"),
    ("autogen_core", ".autogen"),
    ("crewai", ".crewai"),
)


def name_framework_agents(recorder: Recorder) -> None:
    """Have ``recorder``'s run ask each imported framework who is acting (once each)."""
    modules = sys.modules
    for package, module in _RESOLVERS:
        if package not in modules:
            continue
        resolve: Callable[[], str | None] | None = import_module(module, __package__).resolver()
        if resolve is not None:
            agents_of(recorder).add_resolver(resolve)
