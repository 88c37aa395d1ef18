"""Who is acting: a ``rollout.agent()`` name wins, then the first framework that can tell;
one that fails is passed over, and a bad name is refused at once."""

from __future__ import annotations

import asyncio

import pytest

from pytest_rollout.errors import RolloutError
from pytest_rollout.session.acting import Agents


def _broken() -> str | None:
    raise RuntimeError("a framework's internals moved")


def test_a_failing_resolver_is_passed_over_for_the_next() -> None:
    agents = Agents()
    agents.add_resolver(_broken)
    agents.add_resolver(lambda: "billing")
    assert agents() == "billing"


def test_a_named_agent_wins_and_blocks_nest() -> None:
    agents = Agents()
    agents.add_resolver(lambda: "framework")
    with agents.acting("triage"):
        with agents.acting("billing"):
            assert agents() == "billing"
        assert agents() == "triage"
    assert agents() == "framework"


def test_the_name_follows_the_agent_into_its_tasks() -> None:
    agents = Agents()

    async def main() -> list[str | None]:
        async def worker(name: str) -> str | None:
            with agents.acting(name):
                await asyncio.sleep(0)
                return agents()

        return list(await asyncio.gather(worker("a"), worker("b")))

    assert asyncio.run(main()) == ["a", "b"]


@pytest.mark.parametrize("name", ["", "   ", None, "x" * 201])
def test_a_bad_name_is_refused(name: object) -> None:
    with pytest.raises(RolloutError, match=r"rollout\.agent\(\)"), Agents().acting(name):  # type: ignore[arg-type]
        pass
