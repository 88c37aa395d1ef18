"""The viewer's script and style sheet: package data files inlined into the page.

``viewer.js`` and ``viewer.css`` sit beside this module as ordinary source, so they can be
read, diffed and linted (``node --check pytest_rollout/view/viewer.js``) as what they are.
The page loads nothing, so it carries each one as the text of its ``<script>`` or
``<style>`` element: a line break, then the file. Each file is read once per process.

The page's Content-Security-Policy names that exact text by its sha256 hash
(:func:`inline_hash`), so an edited file changes the hash with it and nothing else has to.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import Final

__all__ = ["SCRIPT", "STYLE", "inline_hash", "inline_text"]

#: The package data files of the viewer.
SCRIPT: Final = "viewer.js"
STYLE: Final = "viewer.css"


@cache
def inline_text(name: str) -> str:
    """The text of the page element that carries the asset ``name`` (:data:`SCRIPT` or
    :data:`STYLE`): a line break, then the file as written."""
    source = files(__package__).joinpath(name).read_text(encoding="utf-8")
    return "\n" + source


@cache
def inline_hash(name: str) -> str:
    """The CSP source expression of the asset's inline text: ``sha256-<base64 digest>``."""
    digest = hashlib.sha256(inline_text(name).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")
