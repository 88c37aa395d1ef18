"""How a changed string is shown: both sides around where they part, the new value not cut
where the old one ended."""

from __future__ import annotations

from pytest_rollout.diff.text import VALUE_LIMIT, string_change


def test_a_value_that_grew_is_shown_whole_when_the_old_one_was_short() -> None:
    old = "Today is 2026-12-01."
    new = "Today is 2026-12-02. Yesterday was 2026-12-01, and the week before was quiet."
    assert string_change(old, new) == (f'"{old}"', f'"{new}"')


def test_two_long_values_each_keep_the_limit() -> None:
    was, got = string_change("a" * 300, "b" * 300)
    assert was.startswith('"' + "a" * (VALUE_LIMIT - 1) + "…")  # the quote counts
    assert got.startswith('"' + "b" * (VALUE_LIMIT - 1) + "…")


def test_values_that_part_late_are_shown_from_a_little_before_where_they_part() -> None:
    assert string_change("x" * 200 + "a", "x" * 200 + "b") == (
        "…" + "x" * 20 + 'a"',
        "…" + "x" * 20 + 'b"',
    )
