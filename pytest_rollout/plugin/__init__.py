"""The pytest plugin: wires pytest's flags, ini keys, markers and hooks to the library.

Registered through the ``pytest11`` entry point. Recording, replay, comparison and the
failure report live in modules that never import pytest; this package only decides, per
test, which golden, mode and options apply, and reports through pytest's channels:

- :mod:`.options`: the flags and ini keys; :mod:`.settings`: them parsed, and the marker;
- :mod:`.core`: the plugin object (collection, each test's run, failure reports);
- :mod:`.features`: capture, audit trail, HTML report and pruning, registered when on;
- :mod:`.fixtures`, :mod:`.summary`, :mod:`.tally` (xdist), :mod:`.snapshot` (syrupy),
  :mod:`.hookspecs` (the hooks users implement).
"""

from __future__ import annotations

import pytest

from . import hookspecs
from .core import PLUGIN_KEY, RolloutPlugin
from .fixtures import golden as golden
from .fixtures import recorded_provider as recorded_provider
from .fixtures import rollout as rollout
from .flags import add_options
from .settings import MARKER_DOC, Settings

__all__ = ["RolloutPlugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_DOC)
    plugin = RolloutPlugin(config, Settings.from_config(config))
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, RolloutPlugin.name)
    plugin.register_features()
