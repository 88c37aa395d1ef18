"""The rows of ``run.py`` that are measured on whole processes.

* ``rollout diff A B`` of two generated rollouts, against a process that only reads both files
  and parses every line with ``orjson.loads`` (the floor), once with the garbage collector on
  (Python's default) and once with it off;
* pytest's start-up with the plugin against without it (one trivial test, plugin autoload off);
* the memory a pytest process gains per replayed test, over a generated project of SDK tests
  of 20 tool calls each that each replay their own golden.

Every measurement here alternates the processes it compares and keeps each one's median,
after one untimed run of each. The timed processes cache their bytecode, as an installed
package has it (pip compiles it; an editable install caches it on first import), in a folder
of the benchmark's own: a machine that sets ``PYTHONDONTWRITEBYTECODE`` would otherwise
compile this project's modules from source in every run, but not pytest's or orjson's, which
pip compiled when it installed them.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"

#: The floor: read both files and parse every line, nothing else. ``argv[1]`` is "on" or
#: "off" (the cyclic garbage collector).
FLOOR = """
import gc, sys
import orjson
if sys.argv[1] == "off":
    gc.disable()
loads = orjson.loads
kept = []
for path in sys.argv[2:]:
    with open(path, "rb") as handle:
        data = handle.read()
    kept.append([loads(line) for line in data.split(b"\\n") if line])
"""

#: ``rollout diff``, as the console script runs it.
ROLLOUT = "import sys; from pytest_rollout.cli import entry; sys.argv[0] = 'rollout'; entry()"


def timed(
    command: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> float:
    """Wall seconds of one run of ``command`` (its output is thrown away)."""
    start = time.perf_counter()
    subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start


def cached_bytecode(folder: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a process that caches bytecode in ``folder``."""
    cached = dict(os.environ if env is None else env)
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    cached["PYTHONPYCACHEPREFIX"] = str(folder)
    return cached


def alternate(commands: Sequence[Sequence[str]], repeat: int, **kwargs: object) -> list[float]:
    """The median wall time of each command, the commands run in turn ``repeat`` times after
    one untimed run of each (which fills the bytecode caches)."""
    runs: list[list[float]] = [[] for _ in commands]
    for command in commands:
        timed(command, **kwargs)  # type: ignore[arg-type]
    for _ in range(repeat):
        for index, command in enumerate(commands):
            runs[index].append(timed(command, **kwargs))  # type: ignore[arg-type]
    return [statistics.median(r) for r in runs]


@dataclass(frozen=True)
class DiffFigures:
    events: int
    floor_on: float
    floor_off: float
    diff: float


def diff_process(path_a: Path, path_b: Path, events: int, repeat: int) -> DiffFigures:
    """``rollout diff A B`` against the floor with the collector on and off (medians)."""
    files = [str(path_a), str(path_b)]
    with tempfile.TemporaryDirectory(prefix="bench-bytecode-") as bytecode:
        floor_on, floor_off, diff = alternate(
            [
                [sys.executable, "-c", FLOOR, "on", *files],
                [sys.executable, "-c", FLOOR, "off", *files],
                [sys.executable, "-c", ROLLOUT, "diff", *files],
            ],
            repeat,
            env=cached_bytecode(Path(bytecode)),
        )
    return DiffFigures(events, floor_on, floor_off, diff)


# -- start-up -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartupFigures:
    bare: float
    plugin: float


def startup(repeat: int, *, cached: bool = True) -> StartupFigures:
    """``pytest`` on one trivial test, with ``-p pytest_rollout.plugin`` and without it, plugin
    autoload off, in a directory of its own (no configuration of this project applies).

    ``cached=False``: no process writes bytecode, so the plugin's modules are compiled (and
    pytest rewrites them) in every run, while pytest's come compiled from its install.
    """
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        root = Path(folder)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (root / "test_trivial.py").write_text("def test_trivial():\n    pass\n", encoding="utf-8")
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        if cached:
            env = cached_bytecode(root / "bytecode", env)
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_trivial.py"]
        bare, plugin = alternate(
            [base, [*base, "-p", "pytest_rollout.plugin"]], repeat, cwd=root, env=env
        )
    return StartupFigures(bare, plugin)


# -- memory per replayed test -----------------------------------------------------------------

#: How many tool calls each test of the memory row makes: four turns of five parallel calls.
CALLS_PER_TEST = 20
_CALLS_PER_TURN = 5

#: One test per parameter, each its own golden: an SDK agent (OpenAI Chat Completions through
#: ``rollout.openai``) on the test suite's fake service, which is offline in replay. Each
#: test makes ``CALLS_PER_TEST`` tool calls, in turns of five parallel calls, then answers.
SDK_TESTS = """
import os

import pytest
from fake_models import Call, FakeModel, Say, offline_transport
from sdk_agents import AGENTS, get_weather

CITIES = ["Paris", "Lyon", "Oslo", "Lima", "Perth"]


def live_model(n):
    if os.environ.get("MODEL_OFFLINE"):
        return offline_transport()
    calls = [Call("get_weather", {{"city": CITIES[(n + i) % 5], "i": i}}) for i in range({calls})]
    script = [calls[i : i + {per_turn}] for i in range(0, {calls}, {per_turn})]
    return FakeModel("openai.chat", [*script, Say(f"Sunny, {{n}}.")]).transport()


def weather(city, i):
    return {{**get_weather(city), "i": i}}


@pytest.mark.parametrize("n", range({count}))
def test_agent(rollout, golden, n):
    client = rollout.openai(transport=live_model(n), api_key="sk-test", base_url="http://fake.test/v1")
    tools = rollout.tools({{"get_weather": weather}})
    prompt = f"What is the weather in five cities? ({{n}})"
    with rollout.run(prompt=prompt) as run:
        run.output = AGENTS["openai.chat"][1](client, prompt, tools)
    assert rollout == golden
"""

#: Resident memory after each test, written as JSON to $BENCH_RSS_OUT at the end.
RSS_CONFTEST = """
import json
import os

_RSS = []


def _resident_kib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def pytest_runtest_logfinish(nodeid, location):
    _RSS.append(_resident_kib())


def pytest_sessionfinish(session):
    with open(os.environ["BENCH_RSS_OUT"], "w") as out:
        json.dump(_RSS, out)
"""


@dataclass(frozen=True)
class MemoryFigures:
    tests: int
    warm_up: int
    slope_mib: float  # least-squares growth per test after the warm-up
    total_mib: float  # from the end of the warm-up to the last test
    warm_up_slope_mib: float  # the same over the warm-up's tests


def _slope(values: Sequence[float]) -> float:
    xs = range(len(values))
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(values)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, values, strict=True)) / spread


def replay_memory(tests: int, warm_up: int) -> MemoryFigures:
    """Record ``tests`` SDK tests of ``CALLS_PER_TEST`` tool calls each, then replay them all
    in one pytest process and measure the resident memory it gains per test: after
    ``warm_up`` tests (the figure with a target: memory a test leaves behind), and over
    them (a figure)."""
    if not Path("/proc/self/statm").exists():
        raise SystemExit("the memory row reads /proc/self/statm (Linux)")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        root = Path(folder)
        for helper in ("fake_models.py", "sdk_agents.py"):
            shutil.copy(TESTS / helper, root / helper)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (root / "conftest.py").write_text(RSS_CONFTEST, encoding="utf-8")
        project = SDK_TESTS.format(count=tests, calls=CALLS_PER_TEST, per_turn=_CALLS_PER_TURN)
        (root / "test_agents.py").write_text(project, encoding="utf-8")
        out = root / "rss.json"
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "BENCH_RSS_OUT": str(out)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["-p", "pytest_rollout.plugin"]
        for extra, offline in ((["--rollout-record"], ""), ([], "1")):
            env["MODEL_OFFLINE"] = offline
            done = subprocess.run(
                [*command, *extra], cwd=root, env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"the memory project failed:\n{done.stdout[-3000:]}")
        rss = [kib / 1024 for kib in json.loads(out.read_text(encoding="utf-8"))]
    after = rss[warm_up:]
    first = rss[: warm_up + 1]
    return MemoryFigures(tests, warm_up, _slope(after), after[-1] - after[0], _slope(first))
