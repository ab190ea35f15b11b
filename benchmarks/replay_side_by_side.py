"""fastatari.replay against Stable-Baselines3's ReplayBuffer, side by side in one run.

    python benchmarks/replay_side_by_side.py [--transitions 40000] [--million]
        [--rainbow PATH/TO/cleanrl/rainbow_atari.py]

Real frames: Breakout under fastatari's vector env (8 envs, random actions) is recorded once,
then fed the same to every buffer. Per system: resident bytes per transition (the buffer's
own arrays), ``add`` per vector step of 8 envs (fastatari's with and without the vector env's
``frame_serials``, which let it store each step's new frame without comparing frames),
``sample(32)`` and ``sample(256)`` to torch
tensors on the CPU (medians). ``--million``: each buffer filled to 1M transitions in its own
process, the resident memory it adds (SB3's 28.2 GB optimised buffer cannot be held on a 24 GB
machine: it is left out there, with the reason). Tianshou's and TorchRL's memory-saving buffers
join the table where they install (the ``tianshou`` and ``torchrl`` extras). ``--rainbow``: the
prioritized buffer against CleanRL's own (its classes taken from a CleanRL checkout's
``rainbow_atari.py``, nothing else of the script run): drawing 32 indices with their weights,
a whole ``sample(32)``, back to back and with a network update between samples, and
``update_priorities`` of a batch.
Needs the ``rl`` extra (SB3, torch).
"""
from __future__ import annotations

import argparse
import ast
import functools
import json
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
from gymnasium import spaces

import fastatari

N_ENVS = 8
#: fastatari's buffer fed with the vector env's frame serials besides the arrays
SERIALS = "fastatari.replay, add(..., serials=envs.frame_serials)"
SPACE = spaces.Box(0, 255, (4, 84, 84), np.uint8)
ACTIONS = spaces.Discrete(4)


def record(steps: int, n_envs: int = N_ENVS) -> List[tuple]:
    """``steps`` vector steps: SB3's ``add`` arguments (true last observations at episode
    ends, as SB3's ``terminal_observation``), and the vector env's ``frame_serials`` of each
    step."""
    envs = fastatari.make_vec("breakout", n_envs, autoreset_mode="same_step",
                              repeat_action_probability=0.0)
    rng = np.random.default_rng(0)
    try:
        obs, _ = envs.reset(seed=0)
        out = []
        for _ in range(steps):
            action = rng.integers(0, 4, n_envs)
            next_obs, reward, terminated, truncated, info = envs.step(action)
            real_next = next_obs.copy()
            for i in np.flatnonzero(info.get("_final_obs", np.zeros(n_envs, bool))):
                real_next[i] = info["final_obs"][i]
            infos = [{"TimeLimit.truncated": bool(t)} for t in truncated]
            out.append((obs, real_next, action, reward, terminated | truncated, infos,
                        envs.frame_serials))
            obs = next_obs
        return out
    finally:
        envs.close()


def buffers(size: int) -> Dict[str, Callable[[], Any]]:
    from stable_baselines3.common.buffers import ReplayBuffer as SB3

    from fastatari.replay import ReplayBuffer

    kw = dict(device="cpu", n_envs=N_ENVS)
    made: Dict[str, Callable[[], Any]] = {
        "fastatari.replay": lambda: ReplayBuffer(size, SPACE, ACTIONS, **kw),
        SERIALS: lambda: ReplayBuffer(size, SPACE, ACTIONS, **kw),
        "SB3 ReplayBuffer": lambda: SB3(size, SPACE, ACTIONS, **kw),
        "SB3, optimize_memory_usage": lambda: SB3(size, SPACE, ACTIONS,
                                                  optimize_memory_usage=True,
                                                  handle_timeout_termination=False, **kw),
    }
    for anchor in (TianshouBuffer, TorchRLBuffer):  # where they install
        try:
            anchor(1)
        except ImportError:
            continue
        made[anchor.name] = functools.partial(anchor, size)
    return made


def _terminated_truncated(done: np.ndarray, infos: List[dict]) -> Tuple[np.ndarray, np.ndarray]:
    truncated = np.array([bool(i.get("TimeLimit.truncated", False)) for i in infos])
    return done & ~truncated, truncated


class TianshouBuffer:
    """Tianshou's memory-saving Atari buffer (stack_num=4, only the last frame of each
    observation, no obs_next), fed as its Collector feeds it; samples as torch tensors."""

    name = "Tianshou VectorReplayBuffer, stack_num=4, last frame only"

    def __init__(self, size: int) -> None:
        from tianshou.data import VectorReplayBuffer

        self.buffer = VectorReplayBuffer(size, buffer_num=N_ENVS, stack_num=4,
                                         ignore_obs_next=True, save_only_last_obs=True)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        from tianshou.data import Batch

        terminated, truncated = _terminated_truncated(done, infos)
        info = np.array([dict(i, env_id=k) for k, i in enumerate(infos)])
        self.buffer.add(Batch(obs=obs, act=action, rew=reward, terminated=terminated,
                              truncated=truncated, done=done, obs_next=next_obs, info=info),
                        buffer_ids=np.arange(N_ENVS))

    def sample(self, batch_size: int) -> tuple:
        import torch

        batch, _ = self.buffer.sample(batch_size)
        return tuple(torch.as_tensor(a) for a in (batch.obs, batch.obs_next, batch.act,
                                                  batch.rew, batch.terminated))

    @property
    def nbytes(self) -> int:
        def size(batch: Any) -> int:
            return batch.nbytes if isinstance(batch, np.ndarray) else sum(
                size(value) for _, value in batch.items())
        return size(self.buffer._meta)


class TorchRLBuffer:
    """TorchRL's single frames stacked at sample time (CatFrames' replay-buffer transform
    and slice sampler), fed one [envs, 1 step] TensorDict per step."""

    name = "TorchRL ReplayBuffer + CatFrames, single frames"

    def __init__(self, size: int) -> None:
        from torchrl.data import LazyTensorStorage, ReplayBuffer
        from torchrl.envs import CatFrames

        cat = CatFrames(N=4, dim=-3, in_keys=["pixels"], out_keys=["pixels_stack"],
                        reset_key="_reset")  # outside an env: no parent to read it from
        transform, sampler = cat.make_rb_transform_and_sampler(
            batch_size=32, end_key=("next", "done"), strict_length=True)
        self.buffer = ReplayBuffer(storage=LazyTensorStorage(size, ndim=2), sampler=sampler,
                                   transform=transform, batch_size=32)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        import torch
        from tensordict import TensorDict

        terminated, truncated = _terminated_truncated(done, infos)
        n = N_ENVS
        after = {"pixels": torch.from_numpy(next_obs[:, -1:]),
                 "reward": torch.from_numpy(np.asarray(reward, np.float32)),
                 "done": torch.from_numpy(done).view(n, 1),
                 "terminated": torch.from_numpy(terminated).view(n, 1),
                 "truncated": torch.from_numpy(truncated).view(n, 1)}
        step = TensorDict({"pixels": torch.from_numpy(obs[:, -1:]),
                           "action": torch.from_numpy(action),
                           "next": TensorDict(after, [n])}, [n])
        self.buffer.extend(step.unsqueeze(1))  # [env, time]

    def sample(self, batch_size: int) -> tuple:
        batch = self.buffer.sample(batch_size)
        return (batch["pixels_stack"], batch["next", "pixels_stack"], batch["action"],
                batch["next", "reward"], batch["next", "terminated"])

    @property
    def nbytes(self) -> int:
        columns = self.buffer._storage._storage.values(include_nested=True, leaves_only=True)
        return sum(t.numel() * t.element_size() for t in columns)


def own_bytes(buffer: Any) -> int:
    """The buffer's arrays (for fastatari, the frame chunks as allocated)."""
    if isinstance(buffer, (TianshouBuffer, TorchRLBuffer)):
        return buffer.nbytes
    if hasattr(buffer, "frames"):
        small = sum(getattr(buffer, a).nbytes for a in ("actions", "rewards", "dones",
                                                        "timeouts"))
        return buffer.frames.nbytes + small
    arrays = [a for a in vars(buffer).values() if isinstance(a, np.ndarray)]
    return sum(a.nbytes for a in arrays)


def median_us(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def after_training_steps(theirs: Callable[[], Any], ours: Callable[[], Any],
                         repeats: int) -> Tuple[float, float]:
    """Each sampler's median µs when, as in a training loop, an update of a Nature-DQN network
    on the batch (one thread) runs between samples, the two alternating: the update leaves the
    caches to the network, and every sampler pays for it."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(4, 32, 8, 4), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 4, 2),
        torch.nn.ReLU(), torch.nn.Conv2d(64, 64, 3, 1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(3136, 512), torch.nn.ReLU(), torch.nn.Linear(512, 4))
    optimizer = torch.optim.Adam(net.parameters())
    times: Tuple[List[float], List[float]] = ([], [])
    try:
        for _ in range(repeats):
            for sample, kept in zip((theirs, ours), times, strict=True):
                start = time.perf_counter()
                batch = sample()
                kept.append(time.perf_counter() - start)
                loss = net(batch[0].float() / 255).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return float(np.median(times[0])) * 1e6, float(np.median(times[1])) * 1e6


def side_by_side(transitions: int) -> None:
    steps = transitions // N_ENVS
    recorded = record(steps)
    made = {name: make() for name, make in buffers(transitions).items()}
    add_us: Dict[str, List[float]] = {name: [] for name in made}
    for *step, serials in recorded:  # interleaved: every buffer adds the same step in turn
        for name, buffer in made.items():
            extra = {"serials": serials} if name == SERIALS else {}
            start = time.perf_counter()
            buffer.add(*step, **extra)
            add_us[name].append((time.perf_counter() - start) * 1e6)
    print(f"{transitions} transitions of Breakout (84x84 gray, stack 4), {N_ENVS} envs, "
          f"torch threads: {__import__('torch').get_num_threads()}\n")
    print("| buffer | KB per transition | add µs per step of 8 envs | sample(32) µs | "
          "sample(256) µs |")
    print("|---|---|---|---|---|")
    rows = {}
    for name, buffer in made.items():
        np.random.seed(0)
        slow = isinstance(buffer, TorchRLBuffer)  # a tenth of a second and more a sample
        rows[name] = (own_bytes(buffer) / transitions / 1e3, float(np.median(add_us[name])),
                      median_us(lambda b=buffer: b.sample(32), 20 if slow else 300),
                      median_us(lambda b=buffer: b.sample(256), 5 if slow else 100))
    for name, (kb, add, s32, s256) in rows.items():
        print(f"| {name} | {kb:.2f} | {add:.0f} | {s32:.0f} | {s256:.0f} |")
    base = rows["SB3, optimize_memory_usage"]
    ours = rows["fastatari.replay"]
    print(f"\nfastatari against SB3's optimised buffer: {base[0] / ours[0]:.1f}x less memory, "
          f"sample(32) {base[2] / ours[2]:.1f}x, sample(256) {base[3] / ours[3]:.1f}x faster; "
          f"add {rows[SERIALS][1] / base[1]:.2f}x its time with the frame serials, "
          f"{ours[1] / base[1]:.2f}x without")


def rss_kb() -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS")).split()[1])


def fill_million(name: str) -> None:
    """In a process of its own: fill ``name`` to 1M transitions; print the resident memory it
    added (the recorded steps it is fed from are resident before it is made)."""
    recorded = record(5000)  # 40,000 transitions, fed again and again
    make = buffers(1_000_000)[name]  # its imports (torch, SB3, the anchors) before the baseline
    before = rss_kb()
    buffer = make()
    for i in range(1_000_000 // N_ENVS):
        buffer.add(*recorded[i % len(recorded)][:6])
    buffer.sample(256)
    print(json.dumps({"name": name, "added_kb": rss_kb() - before,
                      "own_bytes": own_bytes(buffer)}))


def million() -> None:
    print("\n| buffer, 1M transitions | resident memory it adds | its arrays |\n|---|---|---|")
    for name in ("fastatari.replay", "SB3, optimize_memory_usage", "SB3 ReplayBuffer"):
        if name != "fastatari.replay":
            need = 28.2 if "optimize" in name else 56.4
            print(f"| {name} | not run: needs {need} GB, this machine has 24 GB | |")
            continue
        out = subprocess.run([sys.executable, __file__, "--fill", name], capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
        got = json.loads(out)
        print(f"| {name} | {got['added_kb'] * 1024 / 1e9:.2f} GB | "
              f"{got['own_bytes'] / 1e9:.2f} GB |")


def cleanrl_classes(path: str) -> Dict[str, Any]:
    """The sum trees and the PrioritizedReplayBuffer of CleanRL's ``rainbow_atari.py``: its
    class definitions only, run in a namespace of what they use."""
    import collections

    import torch

    tree = ast.parse(open(path).read())
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name in
               ("SumSegmentTree", "MinSegmentTree", "PrioritizedReplayBuffer")]
    namespace: Dict[str, Any] = {"np": np, "torch": torch, "deque": collections.deque,
                                 "collections": collections}
    batch = next(node for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "PrioritizedBatch")
    exec(compile(ast.Module(body=[batch, *classes], type_ignores=[]), path, "exec"), namespace)
    return namespace


def rainbow(path: str, transitions: int) -> None:
    import torch

    from fastatari.replay import PrioritizedReplayBuffer

    theirs_module = cleanrl_classes(path)
    args = ((4, 84, 84), torch.device("cpu"), 3, 0.99, 0.5, 0.4, 1e-6)
    ours = PrioritizedReplayBuffer(transitions, *args)
    theirs = theirs_module["PrioritizedReplayBuffer"](transitions, *args)
    recorded = record(transitions, n_envs=1)
    for obs, real_next, action, reward, done, *_ in recorded:  # CleanRL's call
        ours.add(obs, action, reward, real_next, done)
        # (scalars: NumPy 2 refuses the (1,) arrays CleanRL's pinned NumPy 1 took)
        theirs.add(obs, action[0], reward[0], real_next, done[0])
    np.random.seed(0)
    losses = np.random.random(transitions)
    ours.update_priorities(np.arange(ours.size), losses[:ours.size])
    theirs.update_priorities(np.arange(theirs.size), losses[:theirs.size])

    # transitions both hold (fastatari keeps more at episode ends: its size is the larger)
    drawn = np.random.randint(0, min(ours.size, theirs.size), 32)

    def their_draw() -> None:  # the part of their sample() that draws and weighs
        total = theirs.sum_tree.total()
        segment = total / 32
        indices = [theirs.sum_tree.retrieve(np.random.uniform(segment * i, segment * (i + 1)))
                   for i in range(32)]
        probs = np.array([theirs.sum_tree.tree[i + theirs.capacity - 1] for i in indices])
        weights = (theirs.size * probs / total) ** -theirs.beta
        weights / weights.max()

    def our_draw() -> None:  # what its sample() does to draw and weigh
        ours.tree.draw(np.random.random_sample(32), ours.beta, ours.size)

    rows = {"draw 32 indices and weights": (median_us(their_draw, 300),
                                            median_us(our_draw, 300)),
            "sample(32)": (median_us(lambda: theirs.sample(32), 300),
                           median_us(lambda: ours.sample(32), 300)),
            "sample(32) after a training step": after_training_steps(
                lambda: theirs.sample(32), lambda: ours.sample(32), 300),
            "update_priorities of 32": (
                median_us(lambda: theirs.update_priorities(drawn, losses[:32]), 300),
                median_us(lambda: ours.update_priorities(drawn, losses[:32]), 300))}
    print(f"\nPrioritized, n-step 3, {transitions} transitions of Breakout, 1 env\n")
    print("| | CleanRL rainbow_atari.py µs | fastatari µs | ratio |\n|---|---|---|---|")
    for name, (them, us) in rows.items():
        print(f"| {name} | {them:.0f} | {us:.1f} | {them / us:.1f}x |")
    kb = theirs.buffer_obs.nbytes + theirs.buffer_next_obs.nbytes
    print(f"\nmemory per transition: CleanRL {kb / transitions / 1e3:.1f} KB, fastatari "
          f"{ours.nbytes / transitions / 1e3:.1f} KB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=40_000)
    parser.add_argument("--million", action="store_true")
    parser.add_argument("--rainbow", metavar="PATH", help="CleanRL's rainbow_atari.py")
    parser.add_argument("--fill", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fill:
        fill_million(args.fill)
        return
    side_by_side(args.transitions)
    if args.rainbow:
        rainbow(args.rainbow, min(args.transitions, 20_000))
    if args.million:
        million()


if __name__ == "__main__":
    main()
