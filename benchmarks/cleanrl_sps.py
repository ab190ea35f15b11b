"""SPS of one of CleanRL's EnvPool scripts, run unchanged on EnvPool and on fastatari.envpool.

Measures the SPS line the script prints itself (``global_step / elapsed``: env steps, policy and
learner together) at the end of a short CPU run. The script is copied from a CleanRL checkout
(or a bare git dir: ``git show HEAD:cleanrl/SCRIPT``) into a temp dir twice: unchanged (EnvPool)
and with ``import envpool`` replaced by ``from fastatari import envpool``. The two are run
alternately, ``--repeats`` times each, with ``--no-cuda`` (where the script has it),
``CUDA_VISIBLE_DEVICES=`` and ``JAX_PLATFORMS=cpu``::

    python benchmarks/cleanrl_sps.py --cleanrl ~/cleanrl --script ppo_atari_envpool.py \\
        --total-timesteps 20000 --num-envs 8 --repeats 3 [-- EXTRA SCRIPT ARGS]

What runs besides the scripts (this file, as ``--run-one``, starts each one and prints it):

* EnvPool 1.x has no gym API any more (in 1.2.5 ``env_type="gym"`` gives its gymnasium class,
  whose ``num_envs`` cannot be assigned), so for the EnvPool run only, ``envpool.make(...,
  env_type="gym")`` returns a shim with EnvPool 0.x's gym API: ``reset()`` -> obs, ``step()`` ->
  ``(obs, reward, terminated | truncated, info)`` with ``info["TimeLimit.truncated"]``,
  ``gym.spaces``, assignable attributes, and the same conversion on ``xla()``'s recv/step. With
  ``--envpool-python`` naming an interpreter with EnvPool 0.x (and the script's own packages),
  no shim is used.
* The JAX scripts call ``jax.tree_map`` (gone in jax 0.10) and give flax's ``TrainState`` a
  params dataclass (flax >= 0.7.5 raises TypeError). Where needed, for both runs alike,
  ``jax.tree_map`` is aliased to ``jax.tree_util.tree_map`` and ``TrainState.create``/
  ``apply_gradients`` take the dataclass as flax 0.6.8 (CleanRL's pin) did.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORT = re.compile(r"^import envpool$", re.M)
SPS = re.compile(r"^SPS: (\d+)", re.M)


def read_script(cleanrl: str, script: str) -> str:
    root = Path(cleanrl)
    for path in (root / "cleanrl" / script, root / script):
        if path.is_file():
            return path.read_text()
    return subprocess.run(["git", f"--git-dir={root}", "show", f"HEAD:cleanrl/{script}"],
                          check=True, capture_output=True, text=True).stdout


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleanrl", required=True, help="CleanRL checkout or bare git dir")
    parser.add_argument("--script", default="ppo_atari_envpool.py")
    parser.add_argument("--total-timesteps", type=int, default=20000)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="fastatari,envpool")
    parser.add_argument("--envpool-python", default=sys.executable,
                        help="interpreter for the EnvPool runs (default: this one)")
    parser.add_argument("extra", nargs="*", help="more script args, after --")
    args = parser.parse_args()
    source = read_script(args.cleanrl, args.script)
    if len(IMPORT.findall(source)) != 1:
        raise SystemExit(f"{args.script}: expected one 'import envpool' line")
    flags = ["--total-timesteps", str(args.total_timesteps), "--num-envs", str(args.num_envs)]
    flags += ["--no-cuda"] * ("    cuda: bool" in source) + args.extra
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    backends = args.backends.split(",")
    results: dict = {b: [] for b in backends}
    notes: dict = {}
    with tempfile.TemporaryDirectory(prefix="cleanrl_sps_") as tmp:
        for backend in backends:
            text = source if backend == "envpool" else IMPORT.sub(
                "from fastatari import envpool", source)
            Path(tmp, backend).mkdir()
            Path(tmp, backend, args.script).write_text(text)
        print(f"load before: {load()}")
        for repeat in range(args.repeats):
            for backend in backends:
                python = args.envpool_python if backend == "envpool" else sys.executable
                cmd = [python, os.path.abspath(__file__), "--run-one", backend, args.script,
                       *flags]
                start = time.time()
                run = subprocess.run(cmd, cwd=Path(tmp, backend), env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                out = run.stdout
                notes[backend] = [line for line in out.splitlines() if "[cleanrl_sps]" in line]
                sps = [int(s) for s in SPS.findall(out)]
                if run.returncode or not sps:
                    raise SystemExit(f"{backend}: exit {run.returncode}, SPS lines {sps}; "
                                     f"output:\n{out[-3000:]}")
                results[backend].append(sps[-1])
                print(f"run {repeat + 1} {backend}: SPS {sps[-1]} (all: {sps}), "
                      f"{time.time() - start:.0f} s, load after {load()}")
    base = statistics.median(results["envpool"]) if "envpool" in results else None
    print(f"\n{args.script}, {args.total_timesteps} steps, {args.num_envs} envs, CPU, "
          f"{' '.join(args.extra)}\n")
    print("| backend | SPS per run | median SPS | vs EnvPool |\n|---|---|---|---|")
    for backend, values in results.items():
        median = statistics.median(values)
        ratio = f"{median / base:.2f}" if base else "-"
        print(f"| {backend} | {', '.join(map(str, values))} | {median:g} | {ratio} |")
    print("\n".join(f"\n{backend}: " + "; ".join(n.split("] ", 1)[1] for n in lines)
                    for backend, lines in notes.items() if lines))


# -- one run, in the script's interpreter ----------------------------------------------------------
def note(text: str) -> None:
    print(f"[cleanrl_sps] {text}", flush=True)


def shim_envpool() -> None:
    """EnvPool >= 1.0: ``make(..., env_type="gym")`` gets EnvPool 0.x's gym API (see above)."""
    import envpool
    import gym

    if int(envpool.__version__.split(".")[0]) < 1:
        note(f"EnvPool {envpool.__version__}: no shim")
        return

    class GymAPI:
        def __init__(self, env):
            self.env, space = env, env.observation_space
            self.action_space = gym.spaces.Discrete(int(env.action_space.n))
            self.observation_space = gym.spaces.Box(space.low, space.high, space.shape,
                                                    space.dtype)
            self.num_envs, self.metadata = env.config["num_envs"], {}
            self.reward_range = (-float("inf"), float("inf"))

        def __getattr__(self, name):
            return getattr(self.env, name)

        def reset(self, **kwargs):
            return self.env.reset(**kwargs)[0]

        def step(self, action, env_id=None):
            return self._gym(*self.env.step(action, env_id))

        @staticmethod
        def _gym(obs, reward, terminated, truncated, info):
            info = dict(info)
            info["TimeLimit.truncated"] = truncated
            return obs, reward, terminated | truncated, info

        def xla(self):
            handle, recv, send, _ = self.env.xla()

            def recv_gym(handle):
                handle, result = recv(handle)
                return handle, self._gym(*result)

            def step_gym(handle, action, env_id=None):
                return recv_gym(send(handle, action, env_id))
            return handle, recv_gym, send, step_gym

    make = envpool.make

    def make_gym(task_id, env_type="gymnasium", **kwargs):
        env = make(task_id, env_type=env_type, **kwargs)
        return GymAPI(env) if env_type == "gym" else env
    envpool.make = make_gym
    note(f"EnvPool {envpool.__version__} + shim: env_type='gym' wrapped in EnvPool 0.x's "
         f"gym API (reset -> obs, 4-tuple step, TimeLimit.truncated, gym.spaces)")


def compat_jax() -> None:
    """CleanRL's JAX scripts on jax >= 0.6 / flax >= 0.7.5 (both runs alike)."""
    import collections.abc

    import jax
    import optax
    from flax.training import train_state

    if not hasattr(jax, "tree_map"):
        jax.tree_map = jax.tree_util.tree_map
        note(f"jax {jax.__version__}: jax.tree_map = jax.tree_util.tree_map")
    if not hasattr(train_state, "OVERWRITE_WITH_GRADIENT"):  # flax < 0.7.5
        return
    cls = train_state.TrainState
    create, apply = cls.create.__func__, cls.apply_gradients

    def create_any(cls, *, apply_fn, params, tx, **kwargs):
        if isinstance(params, collections.abc.Mapping):
            return create(cls, apply_fn=apply_fn, params=params, tx=tx, **kwargs)
        return cls(step=0, apply_fn=apply_fn, params=params, tx=tx, opt_state=tx.init(params),
                   **kwargs)

    def apply_any(self, *, grads, **kwargs):
        if isinstance(grads, collections.abc.Mapping):
            return apply(self, grads=grads, **kwargs)
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        return self.replace(step=self.step + 1, params=optax.apply_updates(self.params, updates),
                            opt_state=opt_state, **kwargs)
    cls.create, cls.apply_gradients = classmethod(create_any), apply_any
    note("flax TrainState.create/apply_gradients: non-Mapping params as in flax 0.6.8")


def run_one(backend: str, script: str, argv: list) -> None:
    import runpy

    if backend == "envpool":
        shim_envpool()
    if "import flax" in Path(script).read_text():
        compat_jax()
    sys.argv = [script, *argv]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run-one"]:
        run_one(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        main()
