"""examples/dqn_resume.py: a DQN run SIGKILLed at a step and started again goes on from its
last checkpoint, and every training step after it is the uninterrupted run's, bit for bit."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.rl
pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "dqn_resume.py"
SHORT = ["--total-timesteps", "400", "--learning-starts", "100", "--train-frequency", "4",
         "--target-network-frequency", "50", "--buffer-size", "2000",
         "--max-episode-frames", "256"]


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    import fastatari  # the script imports the same fastatari as these tests

    home = str(Path(fastatari.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (home, os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, str(SCRIPT), *SHORT, *args], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=path), timeout=300,
                          cwd=tmp_path)


def losses(path: Path) -> dict:
    """Each training step's loss (hex); a step run twice (before a kill and after the resume)
    keeps its later line, after checking that both are the same."""
    seen: dict = {}
    for line in path.read_text().splitlines():
        step, loss = line.split()
        assert seen.setdefault(step, loss) == loss, f"step {step}: {seen[step]} then {loss}"
    return seen


# Each memory under each autoreset mode of the vector env, and under the EnvPool front.
# Episodes are cut at 256 frames (about 64 steps); where a checkpoint is saved on the step an
# episode ended (122 in the vector env's next_step mode with checkpoints every 61, 128 in the
# EnvPool front's), the resume starts with that env's reset pending.
CASES = {
    "same_step": (["--buffer", "uniform", "--num-envs", "1"], 64, 250),
    "same_step-prioritized": (["--buffer", "prioritized", "--num-envs", "2"], 64, 250),
    "next_step-disk": (["--buffer", "uniform", "--autoreset-mode", "next_step",
                        "--buffer-disk", "frames"], 61, 150),
    "next_step-prioritized": (["--buffer", "prioritized", "--autoreset-mode", "next_step"],
                              61, 150),
    "disabled": (["--buffer", "uniform", "--num-envs", "2", "--autoreset-mode", "disabled"],
                 64, 250),
    "disabled-prioritized": (["--buffer", "prioritized", "--num-envs", "2",
                              "--autoreset-mode", "disabled"], 64, 250),
    "envpool-prioritized-disk": (["--buffer", "prioritized", "--env-api", "envpool",
                                  "--buffer-disk", "ckpt/frames"], 64, 150),
}


@pytest.mark.parametrize("case", CASES)
def test_a_killed_run_resumes_bit_for_bit(tmp_path, case):
    if not SCRIPT.exists():  # wheel test runs copy tests/ without examples/
        pytest.skip("examples/dqn_resume.py is not next to these tests")
    options, every, kill_at = CASES[case]
    options = [*options, "--checkpoint-every", str(every)]
    whole = run(tmp_path, *options, "--losses", "whole.txt")
    assert whole.returncode == 0, whole.stderr[-3000:]
    killed = run(tmp_path, *options, "--losses", "cut.txt", "--checkpoint-dir", "ckpt",
                 "--kill-at", str(kill_at))
    assert killed.returncode == -9, killed.stderr[-3000:]  # SIGKILL, mid-run
    resumed = run(tmp_path, *options, "--losses", "cut.txt", "--checkpoint-dir", "ckpt")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    saved_at = (kill_at - 1) // every * every  # the last checkpoint before the kill
    assert f"resumed from ckpt at step {saved_at + 1}" in resumed.stdout
    want, got = losses(tmp_path / "whole.txt"), losses(tmp_path / "cut.txt")
    assert len(want) == 74 and got == want
