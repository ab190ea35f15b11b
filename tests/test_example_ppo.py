"""examples/ppo_atari.py: a short PPO run finishes and reports its speed."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.rl
pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "ppo_atari.py"


def test_ppo_example_smoke_run():
    if not SCRIPT.exists():  # wheel test runs copy tests/ without examples/
        pytest.skip("examples/ppo_atari.py is not next to these tests")
    # the script imports the same fastatari as these tests (an in-place build or the wheel)
    import fastatari

    home = str(Path(fastatari.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=path)
    args = ["--backend", "fastatari", "--total-timesteps", "2048", "--num-envs", "4",
            "--num-steps", "128", "--device", "cpu", "--max-episode-steps", "200",
            "--log-every", "2"]
    out = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                         env=env, timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^SPS: \d+ \(2048 steps", out.stdout, re.M), out.stdout
    assert re.search(r"SPS \d+ env_SPS \d+", out.stdout), out.stdout  # a periodic line
    # 200-step games end within the run, and their returns are reported
    assert "return" in out.stdout.splitlines()[-2], out.stdout
