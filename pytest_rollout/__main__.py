"""``python -m pytest_rollout``: the same as the ``rollout`` command."""

from pytest_rollout.cli import entry

if __name__ == "__main__":
    entry()
