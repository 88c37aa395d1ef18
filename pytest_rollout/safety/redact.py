"""Redaction (docs/secrets.md): secrets never reach disk.

Every recorded event payload passes through a :class:`Redactor` before its bytes are
written, and :meth:`Redactor.scan` looks at the bytes once more before they reach a file:
a whole golden before it is put in place, and each line a recorder writes but for the bytes
of a payload the gate has passed (:meth:`Redactor.gate_passes`), in which the scan would
find nothing. This module is the engine: it walks values and strings and applies the rule tables of
:mod:`~pytest_rollout.safety.redact_rules`, behind the prefilter of
:mod:`~pytest_rollout.safety.redact_gate`. A secret is found by three layers:

1. **Keys.** The value under a secret-named key (``password``, ``api_key``, ``X-Api-Key``,
   ``Authorization``, ``client_secret``, ...) is hidden whatever it looks like; so is the
   value of a ``[name, value]`` header pair. A name is normalized (ASCII-lowercased, every
   character but ``a-z0-9`` dropped) and is secret when the result is in
   :data:`SECRET_KEYS` or ends with one of a few words (``token``, ``password``,
   ``apikey``, ...), that final word being written unbroken (``pass_word`` is not a
   password; ``input_tokens`` does not end with ``token``).
2. **Environment.** The exact values of environment variables whose name holds a word
   such as ``KEY``, ``TOKEN``, ``SECRET`` or ``PASSWORD`` (values of 8 characters or more
   that are not paths or plain numbers), anywhere in any string.
3. **Patterns.** A table of regular expressions (:data:`BUILTIN_RULES`, plus the user's)
   applied to every string at any depth, dict keys included. A rule with a named group
   ``secret`` hides only that group.

Modes: ``redacted`` writes ``[REDACTED:<label>]``; ``hashed`` writes
``[REDACTED:<label>:sha256:<hex>]`` (the digest of the secret's UTF-8 bytes, so equal secrets
stay equal); ``full`` writes everything verbatim; ``none`` drops every event that held a
secret. Markers are never matched again, so redacting twice changes nothing.

Speed: every built-in pattern runs in linear time (see the rules module), and the gate
answers "no secret here" for most payloads before anything is decoded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Final

import orjson

from .names import name_marker, redact_name, redact_test_id
from .redact_gate import Gate, build_gate
from .redact_rules import (
    BUILTIN_RULES,
    KEY_SUFFIXES,
    SECRET_KEYS,
    SEGMENT_KEYS,
    RedactionError,
    Rule,
    builtin_key_label,
    env_secrets,
    normalize_key,
    suffix_label,
)
from .redact_text import MARKER, MARKER_OPEN, TextRedactor, env_forms, is_marker, json_escaped

__all__ = [
    "BUILTIN_RULES",
    "SECRET_KEYS",
    "RedactionError",
    "RedactionMode",
    "Redactor",
    "Rule",
]


class RedactionMode(StrEnum):
    """What is written in place of a secret."""

    REDACTED = "redacted"
    HASHED = "hashed"
    FULL = "full"
    NONE = "none"


#: The JSON scalars other than strings (checked first: they are most of what a walk meets).
_LEAVES: Final = frozenset({int, float, bool})
#: How many keys a redactor remembers the verdict on.
_KEY_CACHE_SIZE: Final = 4096


def _parse_mode(mode: RedactionMode | str) -> RedactionMode:
    try:
        return RedactionMode(mode)
    except ValueError:
        choices = ", ".join(m.value for m in RedactionMode)
        raise RedactionError(str(mode), f"unknown; use one of {choices}", "mode") from None


def _extra_key_labels(extra_keys: Iterable[str]) -> dict[bytes, str]:
    """Each extra key's normalized name and label: that of the built-in suffix it ends
    with, else the name itself."""
    labels: dict[bytes, str] = {}
    for key in extra_keys:
        name = normalize_key(key)[0] if isinstance(key, str) else b""
        if not name:
            raise RedactionError(str(key), "a key needs at least one letter or digit", "key")
        labels[name] = suffix_label(name) or name.decode()
    return labels


class Redactor:
    """Hides secrets in event payloads; see the module documentation for what is found.

    ``environ`` is read once (``None``: :data:`os.environ`; ``{}`` turns the layer off).
    ``rules`` replaces the built-in table; ``extra_rules`` and ``extra_keys`` add to it.
    """

    __slots__ = (
        "_extra_keys",
        "_extra_search",
        "_key_cache",
        "_name_cache",
        "_names",
        "_scan_gate",
        "_search",
        "_strings",
        "_table",
        "_verbatim",
        "mode",
        "rules_digest",
    )

    def __init__(
        self,
        mode: RedactionMode | str = RedactionMode.REDACTED,
        *,
        rules: Iterable[Rule] = BUILTIN_RULES,
        extra_rules: Iterable[Rule] = (),
        extra_keys: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.mode = _parse_mode(mode)
        all_rules = (*rules, *extra_rules)
        for rule in all_rules:
            if not isinstance(rule, Rule):
                raise RedactionError(repr(rule), "not a Rule(label, pattern)")
        self._extra_keys = _extra_key_labels(extra_keys)
        self._key_cache: dict[str, tuple[str, str | None, str | None]] = {}
        self.rules_digest = self._digest(all_rules)
        secrets = env_secrets(os.environ if environ is None else environ)
        # The gates: None when a rule has no known anchor (every payload is then walked).
        names = list(self._extra_keys)
        # A payload holding an escaped form of a value holds an escaped backslash, which
        # the payload gate never passes: it needs words for the values alone.
        json_forms = [_encoded(json_escaped(v)) for v, _ in secrets]
        forms = [form for value, _ in secrets for form in env_forms(value)]
        scan_forms = {_encoded(f) for form in forms for f in (form, json_escaped(form))}
        gate = build_gate(all_rules, json_forms, names)
        self._scan_gate = build_gate(all_rules, [*json_forms, *sorted(scan_forms)], names)
        hashed = self.mode is RedactionMode.HASHED
        self._strings = TextRedactor(all_rules, secrets, gate, hashed=hashed)
        self._names = self._strings.with_marker(name_marker)
        self._name_cache: dict[str, str] = {}
        self._unpack_fast_path(gate)

    def _unpack_fast_path(self, gate: Gate | None) -> None:
        """Keep what :meth:`redact_payload` needs in plain attributes: it runs for every
        recorded event."""
        self._verbatim = self.mode is RedactionMode.FULL
        self._table = gate.table if gate is not None else b""
        self._search = gate.regex.search if gate is not None else None
        self._extra_search = (
            gate.extra.search if gate is not None and gate.extra is not None else None
        )

    def _digest(self, rules: tuple[Rule, ...]) -> str:
        """What decides the output, minus the environment (so goldens recorded on any
        machine carry the same digest)."""
        keys = sorted(SECRET_KEYS | {k.decode() for k in self._extra_keys})
        document = {
            "format": "pytest-rollout/redact/1",
            "mode": self.mode.value,
            "rules": sorted([r.label, r.pattern] for r in rules),
            "keys": keys,
            "key_suffixes": sorted(s.decode() for s, _, _ in KEY_SUFFIXES),
            "segment_keys": sorted(regex.pattern for regex, _ in SEGMENT_KEYS),
        }
        return hashlib.sha256(orjson.dumps(document, option=orjson.OPT_SORT_KEYS)).hexdigest()

    def __repr__(self) -> str:
        return f"Redactor(mode={self.mode.value!r}, rules_digest={self.rules_digest[:12]!r})"

    # -- public API ---------------------------------------------------------------------

    def redact(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with every secret replaced, or ``value`` itself
        when there is none (or in ``full`` mode). ``none`` mode redacts like ``redacted``;
        :meth:`redact_payload` is the one that drops."""
        if self.mode is RedactionMode.FULL:
            return value
        return self._walk(value)

    def redact_payload(self, payload: bytes) -> bytes | None:
        """Redact orjson-encoded ``payload``: the same bytes object when no secret is in
        it, re-encoded bytes (key order kept) when one was hidden, ``None`` in ``none``
        mode when one was found. Raises :class:`orjson.JSONDecodeError` on bytes that
        are not JSON."""
        if self._verbatim:
            return payload
        if self.gate_passes(payload):
            return payload
        data = orjson.loads(payload)
        redacted = self._walk(data)
        if redacted is data:
            return payload
        if self.mode is RedactionMode.NONE:
            return None
        return orjson.dumps(redacted)

    def gate_passes(self, payload: bytes) -> bool:
        """Whether the gate rules out any secret in orjson-encoded ``payload`` without
        reading it: :meth:`redact_payload` then gives ``payload`` back as it is, and
        :meth:`scan` finds nothing in it (a property test holds the two to that, for every
        built-in rule). ``False`` when the gate says "maybe", and always when it is off (a
        rule it has no words for). The mode plays no part."""
        search = self._search
        if search is None or search(payload.translate(self._table)) is not None:
            return False
        if _ESCAPED in payload:  # text written with escapes: its words are not all visible
            return False
        extra = self._extra_search
        return extra is None or extra(payload.lower()) is None

    def redact_name(self, text: str) -> str:
        """``text`` (a part of a test id) with each secret written as a token that is safe in
        a file name, ``REDACTED-<label>-<digest>``, in every mode (``full`` included): see
        :mod:`~pytest_rollout.safety.names`. ``text`` itself when it holds no secret."""
        found = self._name_cache.get(text)
        if found is None:
            found = redact_name(text, self._names)
            if len(self._name_cache) < _KEY_CACHE_SIZE:
                self._name_cache[text] = found
        return found

    def redact_test_id(self, nodeid: str) -> str:
        """A pytest node id as reports and receipts show it: :meth:`redact_name` applied to
        each of its parts."""
        return redact_test_id(nodeid, self.redact_name)

    def contains_secret(self, value: Any) -> bool:
        """Whether ``value`` holds anything :meth:`redact` would hide (in any mode)."""
        return self._first(value) is not None

    def scan(self, data: bytes | bytearray | memoryview) -> str | None:
        """The label of the first secret in the raw bytes of a file (JSON lines, or any
        text), or ``None``. The secret itself is never returned."""
        if not isinstance(data, bytes):
            data = bytes(data)
        gate = self._scan_gate if _ESCAPED not in data else None
        size = len(data)
        views = gate.prepare(data) if gate is not None else (b"", b"")
        known = [-1, -1]
        pos = 0
        while pos < size:
            hit = pos if gate is None else gate.next_hit(views, pos, known)
            if hit >= size:
                return None
            start = data.rfind(b"\n", 0, hit) + 1
            end = data.find(b"\n", hit)
            if end < 0:
                end = size
            label = self._line_label(data[start:end])
            if label is not None:
                return label
            pos = end + 1
        return None

    # -- keys -----------------------------------------------------------------------------

    def _key(self, key: str) -> tuple[str, str | None, str | None]:
        """The key with its own secrets hidden, the label of its value if secret, and the
        label of the first secret in the key itself. The key names a secret before or after
        its own secrets are hidden (so that redacting twice changes nothing)."""
        cached = self._key_cache.get(key)
        if cached is None:
            hidden = self._strings.redact(key)
            label = self._key_label(key)
            if label is None and hidden is not key:
                label = self._key_label(hidden)
            inner = self._strings.first_label(key) if hidden is not key else None
            cached = (hidden, label, inner)
            if len(self._key_cache) < _KEY_CACHE_SIZE:
                self._key_cache[key] = cached
        return cached

    def _key_label(self, key: str) -> str | None:
        """The label of a secret-named key. A redaction marker in it names nothing: it
        counts as one letter, which is also how the gate sees it (its "[" ends a word, its
        "R" starts another); a "q", which starts no word of the key table (an "x" would make
        ``[REDACTED:jwt]-auth`` an ``x-auth``)."""
        if MARKER_OPEN in key:
            key = MARKER.sub("q", key)
        return self._extra_keys.get(normalize_key(key)[0]) or builtin_key_label(key)

    # -- walking --------------------------------------------------------------------------

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            redacted = self._strings.redact(value)
            # JSON encoded as a string (an HTTP body): what the patterns cannot see in the
            # text, a secret under its key or behind escapes, is looked for in what it holds.
            decoded = _encoded_json(redacted)
            if decoded is not None:
                with contextlib.suppress(RecursionError):
                    walked = self._walk(decoded)
                    if walked is not decoded:
                        return orjson.dumps(walked).decode()
            return redacted
        if value is None or type(value) in _LEAVES:
            return value
        if isinstance(value, (dict, Mapping)):
            return self._walk_mapping(value)
        if isinstance(value, list | tuple):
            return self._walk_sequence(value)
        return value

    def _walk_mapping(self, value: Mapping[Any, Any]) -> Mapping[Any, Any]:
        """``value`` with its keys walked and the values of secret keys hidden; copied from
        the first item that changes."""
        out: dict[Any, Any] | None = None
        for index, (key, item) in enumerate(value.items()):
            new_key, label, _ = self._key(key) if isinstance(key, str) else (key, None, None)
            new_item = self._walk(item) if label is None else self._hide(item, label)
            if out is None:
                if new_key is key and new_item is item:
                    continue
                out = dict(list(value.items())[:index])
            out[new_key] = new_item
        return value if out is None else out

    def _walk_sequence(self, value: list[Any] | tuple[Any, ...]) -> list[Any] | tuple[Any, ...]:
        """``value`` with its items walked (the value of a secret header pair hidden)."""
        pair = self._pair_label(value)
        new: list[Any] | None = None
        for index, item in enumerate(value):
            new_item = self._hide(item, pair) if pair and index else self._walk(item)
            if new_item is not item:
                if new is None:
                    new = list(value)
                new[index] = new_item
        if new is None:
            return value
        return new if isinstance(value, list) else tuple(new)

    def _pair_label(self, value: list[Any] | tuple[Any, ...]) -> str | None:
        """The label of a ``[name, value]`` header pair with a secret name."""
        if len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str):
            return self._key(value[0])[1]
        return None

    def _hide(self, value: Any, label: str) -> Any:
        """``value`` under a secret key: every non-empty string and every number hidden."""
        if isinstance(value, str):
            return self._strings.marker(label, value) if value and not is_marker(value) else value
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self._strings.marker(label, str(value))
        if isinstance(value, (dict, Mapping)):
            return self._hide_mapping(value, label)
        if isinstance(value, list | tuple):
            items = [self._hide(v, label) for v in value]
            if all(a is b for a, b in zip(items, value, strict=True)):
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def _hide_mapping(self, value: Mapping[Any, Any], label: str) -> Mapping[Any, Any]:
        """A mapping under a secret key: its values hidden, the secrets in its keys too."""
        hidden: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            new_key = self._key(key)[0] if isinstance(key, str) else key
            new_item = self._hide(item, label)
            changed = changed or new_key is not key or new_item is not item
            hidden[new_key] = new_item
        return hidden if changed else value

    def _first(self, value: Any) -> str | None:
        """The label of the first secret in ``value`` (what :meth:`_walk` would hide)."""
        if isinstance(value, str):
            found = self._strings.first_label(value)
            decoded = _encoded_json(value) if found is None else None
            if decoded is not None:
                with contextlib.suppress(RecursionError):
                    found = self._first(decoded)
            return found
        if value is None or type(value) in _LEAVES:
            return None
        if isinstance(value, (dict, Mapping)):
            return self._first_in_mapping(value)
        if isinstance(value, list | tuple):
            return self._first_in_sequence(value)
        return None

    def _first_in_mapping(self, value: Mapping[Any, Any]) -> str | None:
        for key, item in value.items():
            found = self._first_in_item(key, item)
            if found is not None:
                return found
        return None

    def _first_in_item(self, key: Any, item: Any) -> str | None:
        """The label of the first secret in one key and its value."""
        if isinstance(key, str):
            _, label, found = self._key(key)
            if found is not None:
                return found
            if label is not None:
                return label if self._hidden_label(item, label) is not None else None
        return self._first(item)

    def _first_in_sequence(self, value: list[Any] | tuple[Any, ...]) -> str | None:
        pair = self._pair_label(value)
        if pair is not None and self._hidden_label(value[1], pair) is not None:
            return pair
        for item in value:
            found = self._first(item)
            if found is not None:
                return found
        return None

    def _hidden_label(self, value: Any, label: str) -> str | None:
        """``label`` if :meth:`_hide` would change ``value``, else the label of a secret in
        one of its keys, else ``None``."""
        if isinstance(value, str):
            return label if value and not is_marker(value) else None
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, int | float):
            return label
        if isinstance(value, (dict, Mapping)):
            return self._hidden_in_mapping(value, label)
        if isinstance(value, list | tuple):
            hidden = (self._hidden_label(item, label) for item in value)
            return label if any(found is not None for found in hidden) else None
        return None

    def _hidden_in_mapping(self, value: Mapping[Any, Any], label: str) -> str | None:
        """:meth:`_hidden_label` of a mapping under a secret key: the label of a secret in a
        key, or ``label`` when a value would be hidden, whichever comes first."""
        for key, item in value.items():
            found = self._key(key)[2] if isinstance(key, str) else None
            if found is None and self._hidden_label(item, label) is not None:
                found = label
            if found is not None:
                return found
        return None

    # -- scanning raw bytes ---------------------------------------------------------------

    def _line_label(self, line: bytes) -> str | None:
        stripped = line.strip()
        if not stripped:
            return None
        try:
            document = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return self._raw_label(stripped)
        try:
            return self._first(document)
        except RecursionError:
            return self._raw_label(stripped)

    def _raw_label(self, line: bytes) -> str | None:
        """A line that is not JSON: the patterns over its text, and ``"key": "value"``
        pairs read with a small tokenizer."""
        text = line.decode("utf-8", "replace")
        found = self._strings.raw_label(text)
        if found is not None:
            return found
        for match in _RAW_PAIR.finditer(text):
            key, value, number = match.group(1, 2, 3)
            if value is None and number is None:
                continue
            label = self._key(_json_string(key))[1]
            if label is None:
                continue
            if number is not None:
                return label
            if value and not is_marker(_json_string(value)):
                return label
        return None


#: A JSON string, with the value after it when it is a key or a pair's name. An opening
#: quote is never right after a backslash, so every start is scanned once.
_RAW_PAIR: Final = re.compile(
    r'(?<!\\)"((?:[^"\\\n]|\\.)*+)"'
    r'(?:[ \t]*+[:,][ \t]*+(?:"((?:[^"\\\n]|\\.)*+)"|(-?[0-9])))?'
)


#: A backslash inside a JSON string, as the encoded bytes hold it: text written with
#: escapes (``\\u002d``, ``\\/``), whose secret words the gates cannot see.
_ESCAPED: Final = b"\\\\"

#: The longest string read as encoded JSON (an HTTP body a tool returned as text).
_MAX_ENCODED: Final = 4 * 1024 * 1024


def _encoded_json(text: str) -> Any:
    """What ``text`` holds when it is JSON encoded as a string (an object, an array, or a
    string encoded again), for secrets under their keys or behind escapes; ``None`` when it
    is not. Re-encoded compactly where a secret was hidden: the same in record and replay,
    so a golden keeps matching itself."""
    if len(text) < 2 or len(text) > _MAX_ENCODED:
        return None
    first = text[0] if text[0] in '{["' else text.lstrip()[:1]
    if first not in ("{", "[", '"'):
        return None
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return found if isinstance(found, dict | list | str) else None


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _json_string(body: str) -> str:
    try:
        decoded = orjson.loads(f'"{body}"')
    except orjson.JSONDecodeError:
        return body
    return decoded if isinstance(decoded, str) else body
