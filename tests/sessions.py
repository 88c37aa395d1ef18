"""A ``RolloutSession`` as the plugin builds one for a test, for tests that drive a session
directly (no pytest run): the SDK, replay and analyzer tests."""

from __future__ import annotations

from typing import Any

from pytest_rollout.format.loader import Rollout
from pytest_rollout.format.recorder import Recorder
from pytest_rollout.session import Mode, RolloutSession

TEST_ID = "t.py::test_agent"
GOLDEN_PATH = "golden/t/test_agent.jsonl"


def new_session(
    mode: Mode = Mode.RECORD, golden: Rollout | None = None, **options: Any
) -> RolloutSession:
    """A session of the test ``TEST_ID`` in ``mode``, replaying ``golden``, recording into a
    fresh in-memory recorder unless ``recorder=`` is given; ``options`` go to
    ``RolloutSession`` as they are."""
    options.setdefault("recorder", Recorder())
    return RolloutSession(
        test_id=TEST_ID, mode=mode, golden_path=GOLDEN_PATH, golden=golden, **options
    )
