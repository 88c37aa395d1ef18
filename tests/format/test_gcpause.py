"""The collector pause around bulk work: the collector's state is restored, and the many
containers a bulk block builds leave the young generation at once, so that its next passes
do not walk a whole loaded file again."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_loader import START, doc, done, ev

from pytest_rollout.format.gcpause import collector_paused
from pytest_rollout.format.loader import load


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector enabled and nothing frozen, as in a plain test process."""
    was_enabled = gc.isenabled()
    gc.enable()
    gc.collect()
    try:
        yield
    finally:
        gc.unfreeze()
        if not was_enabled:
            gc.disable()


def _young(obj: object) -> bool:
    """Whether ``obj`` is in a generation that the collector's frequent passes walk."""
    younger = range(len(gc.get_count()) - 1)
    return any(o is obj for g in younger for o in gc.get_objects(generation=g))


def _bulk() -> list[dict[str, list[int]]]:
    return [{"items": [i]} for i in range(20 * gc.get_threshold()[0])]


@pytest.mark.usefixtures("collector_on")
def test_a_bulk_block_leaves_nothing_young() -> None:
    with collector_paused():
        assert not gc.isenabled()
        built = _bulk()
    assert gc.isenabled()
    assert gc.get_count()[0] < gc.get_threshold()[0]
    assert gc.is_tracked(built[0])
    assert not _young(built[0])
    assert not _young(built)
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("collector_on")
def test_a_small_block_leaves_the_generations_alone() -> None:
    with collector_paused():
        built = [{"items": [1]}]
    assert _young(built[0])


@pytest.mark.usefixtures("collector_on")
def test_a_disabled_collector_stays_disabled_and_untouched() -> None:
    gc.disable()
    with collector_paused():
        built = _bulk()
    assert not gc.isenabled()
    assert _young(built[0])  # the caller runs the collector as it chooses


@pytest.mark.usefixtures("collector_on")
def test_objects_the_caller_froze_stay_frozen() -> None:
    kept = [{"frozen": [1]}]
    gc.freeze()
    frozen = gc.get_freeze_count()
    with collector_paused():
        built = _bulk()
    assert gc.get_freeze_count() == frozen
    generations = range(len(gc.get_count()))
    assert not any(o is kept for g in generations for o in gc.get_objects(generation=g))
    assert built


@pytest.mark.usefixtures("collector_on")
def test_a_young_cycle_is_still_collected() -> None:
    class Node:
        pass

    cycle = Node()
    cycle.self = cycle  # type: ignore[attr-defined]
    gone = weakref.ref(cycle)
    del cycle
    with collector_paused():
        _bulk()
    gc.collect()
    assert gone() is None


@pytest.mark.usefixtures("collector_on")
def test_a_loaded_file_is_not_left_to_the_young_passes(tmp_path: Path) -> None:
    calls = [ev(seq, "tool.call.started", {"step": 1, "args": [seq]}) for seq in range(1, 3000)]
    path = tmp_path / "run.jsonl"
    path.write_bytes(doc(START, *calls, done(3000)))
    rollout = load(path)
    assert gc.get_count()[0] < gc.get_threshold()[0]
    assert not _young(rollout.events[5].data)
