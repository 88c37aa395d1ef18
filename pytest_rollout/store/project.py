"""The project around a folder, as pytest would find it from there: its root folder and the
two settings of its pytest configuration that say where runs are kept (``rollout_dir``, the
capture directory, and pytest's ``cache_dir``, under which the runs cache lives).

The ``rollout`` command runs outside pytest, so it looks for the configuration the way pytest
does: from the folder up, the first folder holding a pytest configuration file is the root
(``pytest.toml``, ``.pytest.toml``, ``pytest.ini``, ``.pytest.ini``, a ``pyproject.toml``
with a ``[tool.pytest]`` or ``[tool.pytest.ini_options]`` table, a ``tox.ini`` with a
``[pytest]`` section, a ``setup.cfg`` with a ``[tool:pytest]`` section). Without one, the
nearest folder with a ``pyproject.toml`` is the root, else the nearest with a ``setup.py``,
else the folder itself. A configuration file that cannot be read or parsed still marks the
root (pytest would stop there too), with no settings.

Nothing is created; the files are read, never written. This module never imports pytest.
"""

from __future__ import annotations

import configparser
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CACHE_DIR", "RUNS_CACHE", "Project", "find_project"]

#: pytest's cache folder, relative to the root, when ``cache_dir`` does not say otherwise.
CACHE_DIR: Final = ".pytest_cache"
#: The runs cache (the last run of each test), relative to the cache folder: pytest's
#: ``cache.mkdir("rollout")`` is ``<cache_dir>/d/rollout``.
RUNS_CACHE: Final = ("d", "rollout", "runs")
#: The settings read; any other is left alone.
_KEYS: Final = ("rollout_dir", "cache_dir")
#: The largest configuration file read (a bigger one counts as unreadable).
_MAX_CONFIG_BYTES: Final = 4 * 1024 * 1024

_Settings = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Project:
    """A project's root folder, its configuration file (``None``: none was found) and the
    ``rollout_dir`` and ``cache_dir`` it sets (missing keys: not set)."""

    root: Path
    config_file: Path | None
    settings: _Settings

    @property
    def cache_dir(self) -> Path:
        """pytest's cache folder: ``cache_dir`` (``~`` and ``$VARS`` expanded, relative to the
        root), else ``.pytest_cache`` in the root."""
        given = self.settings.get("cache_dir", "").strip()
        if not given:
            return self.root / CACHE_DIR
        return self.root / os.path.expandvars(os.path.expanduser(given))

    @property
    def runs_cache(self) -> Path:
        """The folder where the plugin keeps each test's last run when nothing is captured."""
        return self.cache_dir.joinpath(*RUNS_CACHE)


def find_project(start: Path) -> Project:
    """The project ``start`` (an absolute folder) is in; see the module docstring."""
    folders = (start, *start.parents)
    for folder in folders:
        for name, read in _CONFIG_FILES:
            candidate = folder / name
            if not candidate.is_file():
                continue
            settings = read(candidate)
            if settings is not None:
                return Project(root=folder, config_file=candidate, settings=settings)
    for marker in ("pyproject.toml", "setup.py"):
        for folder in folders:
            if (folder / marker).is_file():
                return Project(root=folder, config_file=None, settings={})
    return Project(root=start, config_file=None, settings={})


def _text(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_CONFIG_BYTES + 1)
    except OSError:
        return None
    if len(data) > _MAX_CONFIG_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _picked(values: Mapping[str, object]) -> dict[str, str]:
    """The settings this module reads, as text (pytest reads a TOML scalar as its text)."""
    return {
        key: str(value)
        for key, value in values.items()
        if key in _KEYS and isinstance(value, str | int | float)
    }


def _toml(path: Path) -> dict[str, object] | None:
    text = _text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def _pytest_toml(path: Path) -> _Settings:
    """``pytest.toml``: always the configuration; its settings in the ``[pytest]`` table."""
    document = _toml(path) or {}
    table = document.get("pytest")
    return _picked(table) if isinstance(table, dict) else {}


def _pyproject(path: Path) -> _Settings | None:
    """``pyproject.toml``: the configuration when it has a ``[tool.pytest]`` table (settings
    in it, or in its ``ini_options``)."""
    document = _toml(path)
    if document is None:
        return {}
    tool = document.get("tool")
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return None
    ini = table.get("ini_options")
    return _picked(ini if isinstance(ini, dict) else table)


def _ini_section(section: str, always: bool) -> Callable[[Path], _Settings | None]:
    """An ini file's reader: the settings in ``section``; a file without it is the
    configuration only when ``always``."""

    def read(path: Path) -> _Settings | None:
        text = _text(path)
        parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\x00")
        try:
            if text is None:
                raise configparser.Error("unreadable")
            parser.read_string(text, source=str(path))
        except configparser.Error:
            return {}
        if not parser.has_section(section):
            return {} if always else None
        return _picked(dict(parser.items(section)))

    return read


#: pytest's configuration files, in the order it looks for them in each folder.
_CONFIG_FILES: Final[tuple[tuple[str, Callable[[Path], _Settings | None]], ...]] = (
    ("pytest.toml", _pytest_toml),
    (".pytest.toml", _pytest_toml),
    ("pytest.ini", _ini_section("pytest", always=True)),
    (".pytest.ini", _ini_section("pytest", always=True)),
    ("pyproject.toml", _pyproject),
    ("tox.ini", _ini_section("pytest", always=False)),
    ("setup.cfg", _ini_section("tool:pytest", always=False)),
)
