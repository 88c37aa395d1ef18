"""One line of a rollout, checked around its parsing by orjson (docs/file-format.md).

orjson already refuses NaN, Infinity, overflowing floats, lone surrogates, a byte order
mark and invalid UTF-8; the two things it would accept silently (integers beyond 64 bits
become floats, a duplicate key keeps its last value) are detected here. So are the loader's
limits on a line: its size, its JSON elements (before it is parsed, so hostile input cannot
make the parser build a huge object) and its nesting depth (after). All on the line's raw
bytes, with a handful of C calls, never by walking the parsed values, so that a line of
megabytes costs about what parsing it costs. A refusal is a :class:`Refusal` carrying the
reason; the loader names the file and the line.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

__all__ = ["Refusal", "parse_line"]

_MIN_INT: Final = -(2**63)
_MAX_INT: Final = 2**64 - 1
# An integer needs 19 digits or more to leave the 64-bit range; shorter runs are safe.
# Every digit becomes "0", so one find() spots 19 digits in a row (C speed; a regex
# search for \d{19} cost most of a bulk load).
_DIGITS_TO_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
_NINETEEN_ZEROS: Final = b"0" * 19


class Refusal(Exception):
    """A line was refused; carries the reason until the line number is known."""


def parse_line(raw: bytes, line_bytes: int, elements: int, depth: int) -> Any:
    """The parsed line, after every check of its bytes: the limits on a line's size,
    elements and depth, duplicate keys and integers beyond 64 bits; raises
    :class:`Refusal`. A line may be 16 MiB: each check is a pass in C."""
    if len(raw) > line_bytes:
        raise Refusal(f"line is {len(raw)} bytes, over the {line_bytes}-byte limit")
    # The commas and opening brackets, in one pass: few of them bound both limits below.
    marks = raw.translate(None, _NOT_MARKS)
    openings = len(marks) - marks.count(b",")
    # Every JSON element takes at least one byte of its own, so only a line longer than the
    # element limit can exceed it; count those on the raw bytes before parsing anything.
    if len(raw) > elements and len(marks) >= elements:
        _check_element_count(raw, elements, openings)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Refusal(_decode_reason(raw, exc)) from None
    # Depth needs one bracket per level: a line with few brackets cannot be too deep.
    if openings > depth:
        _check_depth(raw, depth)
    _check_keys_and_integers(raw, obj, len(marks))
    return obj


def _check_keys_and_integers(raw: bytes, obj: Any, marks: int) -> None:
    """Refuse a duplicate key or an integer beyond 64 bits in ``raw``, parsed as ``obj``;
    ``marks``: its commas and opening brackets.

    A line of few elements for its size (megabytes of text in a few strings) is re-read
    exactly: with a hook call per element, that costs about a parse, less than the passes
    below. A line that orjson writes back byte for byte has neither (a dropped key or an
    integer made a float would show in the writing). Otherwise no digit run long enough to
    leave 64 bits, and as many colons in the writing as in the line, clear it: each key
    owns one structural colon, and orjson writes every parsed string with its colons
    unescaped (a colon written as \\u003a would break the count: that goes the exact way).
    """
    if len(raw) >= _SPARSE_BYTES * marks:
        _check_exactly(raw)
        return
    try:
        written = orjson.dumps(obj)
    except orjson.JSONEncodeError:  # nesting deeper than orjson writes (a custom depth)
        _check_exactly(raw)
        return
    if written == raw:
        return
    if (
        raw.translate(_DIGITS_TO_ZERO).find(_NINETEEN_ZEROS) >= 0
        or b"\\u003" in raw
        or raw.count(b":") != written.count(b":")
    ):
        _check_exactly(raw)


def _decode_reason(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    reason = exc.msg
    if "byte order mark" in reason:
        return f"invalid JSON at column {exc.colno}: a UTF-8 byte order mark is not allowed"
    if "UTF-8" in reason:
        # orjson says "surrogates not allowed" at column 1 for any invalid byte: find it.
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            byte = raw[bad.start]
            return f"line is not valid UTF-8 (byte 0x{byte:02x} at column {bad.start + 1})"
        return "line is not valid UTF-8"
    return f"invalid JSON at column {exc.colno}: {reason}"


#: A line with at least this many bytes for each comma and opening bracket (so for each
#: element past the first) is checked for duplicate keys and big integers exactly.
_SPARSE_BYTES: Final = 1024
#: Every byte but the commas and the opening brackets (deleted to count those in one pass).
_NOT_MARKS: Final = bytes(b for b in range(256) if b not in b",[{")
#: Bytes that only matter to the shape of a line, with the brackets made one kind: the
#: depth check peels ``()`` pairs, one level a pass.
_BRACKETS: Final = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_JSON_SPACE: Final = b" \t\r\n"


def _structure(raw: bytes, max_strings: int) -> bytes | None:
    """``raw`` with every string literal replaced by ``0`` and whitespace removed: what is
    left are the line's structural characters, so counts on it are exact for valid JSON.

    All in C: escapes (``\\\\``, then ``\\"``) are removed, after which every quote
    opens or closes a string, so splitting on quotes alternates between the outside and the
    inside of strings. ``None`` when the line holds more than ``max_strings`` quotes
    (splitting would cost memory per string; the caller decides without it).
    """
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    if raw.count(b'"') > 2 * max_strings:
        return None
    if b'"' in raw:
        raw = b"0".join(raw.split(b'"')[::2])
    return raw.translate(None, _JSON_SPACE)


def _check_element_count(raw: bytes, limit: int, openings: int) -> None:
    """Refuse a line of more than ``limit`` JSON elements, before it is parsed;
    ``openings``: its ``[`` and ``{``, counted on the raw bytes.

    The root, plus one element per child of a non-empty container: one more than its
    commas. Commas and openings on the raw bytes, less the empty ``[]`` and ``{}``, bound
    that from above (strings only add to it); only a line that this bound cannot clear is
    counted exactly, on its structure (:func:`_structure`).
    """
    if raw.count(b",") + openings - raw.count(b"[]") - raw.count(b"{}") < limit:
        return
    # Each element is at most two string literals (a key and its value), four quotes.
    shape = _structure(raw, 2 * limit + 2)
    if shape is None:
        raise Refusal(f"more than {limit} JSON elements in one line")
    openings = shape.count(b"[") + shape.count(b"{")
    empty = shape.count(b"[]") + shape.count(b"{}")
    if 1 + shape.count(b",") + openings - empty > limit:
        raise Refusal(f"more than {limit} JSON elements in one line")


def _check_depth(raw: bytes, depth: int) -> None:
    """Refuse a (parsed, so valid) line nested deeper than ``depth``.

    Only containers are levels (a scalar inside the 100th container is at depth 100). Its
    brackets, outside strings, are peeled one level a pass (every innermost ``()`` at once,
    in C); what is left after ``depth`` passes is deeper than that.
    """
    shape = _structure(raw, len(raw))
    assert shape is not None
    brackets = shape.translate(_BRACKETS, _NOT_BRACKETS)
    for peeled in range(depth):
        if len(brackets) <= 2 * (depth - peeled):
            return  # a balanced run of 2k brackets nests at most k deep
        brackets = brackets.replace(b"()", b"")
    if brackets:
        raise Refusal(f"JSON nesting deeper than {depth} levels")


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise Refusal(f"duplicate key {json.dumps(key)}")
            seen.add(key)
    return result


def _checked_int(text: str) -> int:
    # 2**64 has 20 digits: a longer literal is out of range before int() is asked to parse
    # it (which would also trip Python's limit on huge integer strings).
    if len(text.lstrip("-")) > 20 or not _MIN_INT <= (value := int(text)) <= _MAX_INT:
        raise Refusal(f"integer {_short_text(text)} is beyond 64 bits")
    return value


def _check_exactly(raw: bytes) -> None:
    """Re-read a suspicious line with hooks that see every key and integer literal."""
    try:
        json.loads(raw, object_pairs_hook=_reject_duplicates, parse_int=_checked_int)
    except RecursionError:  # only reachable with a custom depth limit near Python's own
        raise Refusal("JSON nesting too deep to check its keys and integers") from None


def _short_text(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."
