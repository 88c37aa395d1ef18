"""Record the example agent, replay it, then break it and read the failure report.

    python examples/demo.py

Each step prints the pytest command it runs. Goldens go to a temporary directory, so
the committed ones in examples/weather/golden/ are left alone. Exits 0 when recording
and replay pass and the broken agent fails with a divergence report, as they should.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent / "weather"


def pytest(*args: str, bug: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WEATHER_AGENT_BUG": bug}
    shown = (f"WEATHER_AGENT_BUG={bug} " if bug else "") + "pytest " + " ".join(args)
    print(f"\n$ {shown}", flush=True)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=EXAMPLE,
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )
    print(result.stdout.rstrip(), flush=True)
    return result


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="rollout-demo-") as golden:
        print(f"# 1. Record the agent's runs as goldens (in {golden})")
        if pytest("-q", "--rollout-record", f"--rollout-golden-dir={golden}").returncode:
            return 1
        print("\n# 2. Replay every test from its golden: no live model, no live tools")
        if pytest("-q", f"--rollout-compare={golden}").returncode:
            return 1
        print("\n# 3. Break the agent (it lowercases tool arguments) and replay again")
        broken = pytest("-q", f"--rollout-compare={golden}", "-k", "paris", bug="lowercase-city")
        if broken.returncode != 1 or "tool_call_mismatch" not in broken.stdout:
            print("\nexpected the broken agent to fail with a tool_call_mismatch report")
            return 1
    print("\nThe report above says where the run left its golden, what changed, the score,")
    print("and how to fork the conversation from the last point both runs share.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
