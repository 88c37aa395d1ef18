"""The first difference is described as deepdiff would, without importing it when one value
changed (docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_rollout.diff import compare as compare_module
from pytest_rollout.diff.canonical import CanonicalEvent, canonical_bytes
from pytest_rollout.diff.compare import FieldChange, field_changes
from pytest_rollout.format.events import Event

_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-3, 3, allow_nan=False, width=16),
    st.sampled_from(["", "a", "b", "Rome", "Paris", "1"]),
)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "city", "0", "id"]), inner, max_size=4)
    ),
    max_leaves=12,
)


def _event(data: Any, event_type: str = "tool.call.started") -> CanonicalEvent:
    view = {"type": event_type, "data": data}
    source = Event(0, "2026-01-01T00:00:00Z", event_type, data, 1, 1)
    return CanonicalEvent(1, event_type, data, canonical_bytes(view), source)


def _by_deepdiff(a: CanonicalEvent, b: CanonicalEvent, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(compare_module, "_single_change", lambda x, y: None)
        return field_changes(a, b)


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "city", "args"]), _VALUE, max_size=4),
    st.data(),
)
def test_one_changed_value_is_described_as_deepdiff_does(
    data: dict[str, Any], draw: st.DataObject
) -> None:
    if draw.draw(st.booleans()):
        other = _mutated(data, draw)
    else:
        other = draw.draw(st.dictionaries(st.sampled_from(["a", "b", "city", "args"]), _VALUE))
    a, b = _event(data), _event(other)
    if a.key == b.key:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert field_changes(a, b) == _by_deepdiff(a, b, monkeypatch)


def _mutated(value: Any, draw: st.DataObject) -> Any:
    """``value`` with at most one leaf replaced by another of any kind."""
    if isinstance(value, dict) and value:
        key = draw.draw(st.sampled_from(sorted(value)))
        return {**value, key: _mutated(value[key], draw)}
    if isinstance(value, list) and value:
        index = draw.draw(st.integers(0, len(value) - 1))
        return [*value[:index], _mutated(value[index], draw), *value[index + 1 :]]
    if draw.draw(st.booleans()):
        return draw.draw(_LEAF)
    same_kind = {bool: st.booleans(), int: st.integers(-5, 5), float: st.floats(-3, 3, width=16)}
    return draw.draw(same_kind.get(type(value), st.text(max_size=3)))


def test_a_changed_argument_is_one_change_with_its_path() -> None:
    a = _event({"name": "get_weather", "arguments": {"city": "Rome", "days": [1, 2]}})
    b = _event({"name": "get_weather", "arguments": {"city": "Rome", "days": [1, 3]}})
    assert field_changes(a, b) == (FieldChange("data.arguments.days[1]", "changed", 2, 3),)


def test_describing_one_changed_value_does_not_import_deepdiff() -> None:
    code = (
        "import sys\n"
        "from pytest_rollout.diff.compare import compare\n"
        "from pytest_rollout.format.events import Event\n"
        "a = [Event(0, 't', 'run.started', {'model': 'm'}, 0, 1),\n"
        "     Event(1, 't', 'tool.call.started', {'name': 'f', 'arguments': {'x': 1}}, 1, 2)]\n"
        "b = [a[0], a[1]._replace(data={'name': 'f', 'arguments': {'x': 2}})]\n"
        "first = compare(a, b).first\n"
        "assert first is not None and first.changes[0].path == 'data.arguments.x', first\n"
        "print('deepdiff' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
