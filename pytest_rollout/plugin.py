"""The pytest plugin: wires pytest to the pytest-rollout library.

Registered through the ``pytest11`` entry point. It holds no logic of its own: recording,
loading, comparing and scoring live in modules that never import pytest.
"""
