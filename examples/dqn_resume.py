"""DQN on Atari that survives a kill: checkpoint every K steps, resume exactly.

Written in the layout of CleanRL's ``dqn_atari.py`` (arguments, seeding, envs, Q-network,
replay memory, the loop), with fastatari's vector env (any autoreset mode) or its EnvPool
front (``--env-api envpool``), fastatari's replay memory, and one checkpoint folder
(:mod:`fastatari.checkpoint`) that holds the whole run: every env's snapshot, the replay memory
(saved incrementally: the frames added since the last save), the generators, the networks and
the optimizer. A run killed at any step and started again with the same arguments
goes on from its last checkpoint, and every training step after it is the one the
uninterrupted run takes, bit for bit (CPU, deterministic torch)::

    python examples/dqn_resume.py --total-timesteps 100000 --checkpoint-dir ckpt
    # killed (SIGKILL, a preempted node, a time limit): the same command resumes
    python examples/dqn_resume.py --total-timesteps 100000 --checkpoint-dir ckpt

``--buffer prioritized`` takes the prioritized n-step buffer instead of the uniform one;
``--losses FILE`` appends each training step's ``step loss`` (the loss's exact bits in hex);
``--buffer-disk FOLDER`` keeps the memory's frames on disk there (``disk=``: a checkpoint
links its complete chunks instead of copying them when both are on one file system).

Needs torch (``pip install "fastatari[rl]"`` brings it).
"""

from __future__ import annotations

import argparse
import os
import signal
from dataclasses import dataclass, field, fields
from typing import Any, Dict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import fastatari
import fastatari.envpool
from fastatari import checkpoint
from fastatari.replay import PrioritizedReplayBuffer, ReplayMemory


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------
def arg(default: Any, doc: str) -> Any:
    return field(default=default, metadata={"help": doc})


@dataclass
class Args:
    seed: int = arg(1, "seed of numpy, torch and the envs")
    env_id: str = arg("breakout", "the game")
    num_envs: int = arg(1, "parallel games (CleanRL's dqn_atari: 1)")
    total_timesteps: int = arg(10_000_000, "agent steps of each env")
    learning_rate: float = arg(1e-4, "Adam learning rate")
    buffer: str = arg("uniform", "'uniform' (ReplayMemory) or 'prioritized' (n-step, PER)")
    buffer_size: int = arg(1_000_000, "transitions the replay memory holds")
    gamma: float = arg(0.99, "discount")
    n_step: int = arg(3, "n-step returns of the prioritized buffer")
    target_network_frequency: int = arg(1000, "steps between target network updates")
    batch_size: int = arg(32, "transitions per training step")
    start_e: float = arg(1.0, "exploration epsilon at the start")
    end_e: float = arg(0.01, "exploration epsilon at the end")
    exploration_fraction: float = arg(0.10, "fraction of the steps over which epsilon decays")
    learning_starts: int = arg(80_000, "steps before training starts")
    train_frequency: int = arg(4, "steps between training steps")
    checkpoint_dir: str = arg("", "the run's checkpoint folder (resumed from when it holds one)")
    checkpoint_every: int = arg(10_000, "steps between checkpoints")
    losses: str = arg("", "a file each training step's 'step loss' line is appended to")
    env_api: str = arg("vector", "'vector' (fastatari.make_vec) or 'envpool' (its EnvPool front)")
    autoreset_mode: str = arg("same_step", "the vector env's: same_step, next_step, disabled")
    buffer_disk: str = arg("", "a folder for the replay memory's frames (default: memory)")
    kill_at: int = arg(-1, "SIGKILL this process at this step (to test a resume)")
    max_episode_frames: int = arg(108_000, "emulator frames before a game is truncated")


def parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        kind = type(f.default)
        parser.add_argument("--" + f.name.replace("_", "-"), type=kind, default=f.default,
                            help=f.metadata["help"])
    args = Args(**vars(parser.parse_args()))
    if (args.env_api == "envpool" or args.autoreset_mode == "next_step") and args.num_envs > 1:
        # the step after an episode's end is the next one's reset, no transition; the memory
        # takes a row a step from every env, so one env (CleanRL's dqn_atari's number)
        parser.error("next-step autoreset (the EnvPool front's) runs one env here")
    return args


# ---------------------------------------------------------------------------------------------
# The Q-network (CleanRL's)
# ---------------------------------------------------------------------------------------------
class QNetwork(nn.Module):
    def __init__(self, actions: int) -> None:
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, actions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x / 255.0)


def linear_schedule(start_e: float, end_e: float, duration: float, t: int) -> float:
    slope = (end_e - start_e) / duration
    return max(slope * t + start_e, end_e)


# ---------------------------------------------------------------------------------------------
# Torch states as NumPy (one checkpoint holds them, saved and loaded exactly, no pickle)
# ---------------------------------------------------------------------------------------------
def to_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, dict):
        return {str(k): to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(v) for v in value)
    return value


def to_torch(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, dict):  # an optimizer's per-parameter state is keyed by int
        return {int(k) if k.isdigit() else k: to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(v) for v in value)
    return value


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------
def main() -> None:
    args = parse()
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)  # exploration
    np.random.seed(args.seed)  # the prioritized buffer draws from np.random (CleanRL's)

    envs = make_envs(args)
    n = args.num_envs
    actions_n = int(envs.single_action_space.n)
    q_network, target_network = QNetwork(actions_n), QNetwork(actions_n)
    optimizer = optim.Adam(q_network.parameters(), lr=args.learning_rate)
    target_network.load_state_dict(q_network.state_dict())
    shape = envs.single_observation_space.shape
    rb: Any
    disk = args.buffer_disk or None
    if disk:
        os.makedirs(disk, exist_ok=True)
    if args.buffer == "prioritized":
        rb = PrioritizedReplayBuffer(args.buffer_size, shape, None, args.n_step, args.gamma,
                                     n_envs=n, disk=disk)
    else:
        rb = ReplayMemory(args.buffer_size, shape, n, disk=disk)
    sampler = np.random.default_rng(args.seed + 1)  # the uniform memory's draws

    rngs = {"explore": rng, "sample": sampler, "global": np.random}
    start = 0
    if args.checkpoint_dir and os.path.exists(os.path.join(args.checkpoint_dir,
                                                           checkpoint.files.MANIFEST)):
        saved = checkpoint.load(args.checkpoint_dir, envs=envs, memory=rb, rngs=rngs)
        obs, start, restarting = saved["obs"], int(saved["step"]) + 1, saved["restarting"]
        q_network.load_state_dict(to_torch(saved["q"]))
        target_network.load_state_dict(to_torch(saved["target"]))
        optimizer.load_state_dict(to_torch(saved["optimizer"]))
        print(f"resumed from {args.checkpoint_dir} at step {start}", flush=True)
    else:
        obs, _ = envs.reset() if args.env_api == "envpool" else envs.reset(seed=args.seed)
        restarting = np.zeros(n, bool)  # next-step autoreset: this step resets these envs

    losses = open(args.losses, "a") if args.losses else None
    for global_step in range(start, args.total_timesteps):
        if global_step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        epsilon = linear_schedule(args.start_e, args.end_e,
                                  args.exploration_fraction * args.total_timesteps, global_step)
        if rng.random() < epsilon:
            actions = rng.integers(0, actions_n, n)
        else:
            with torch.no_grad():
                actions = q_network(torch.from_numpy(obs)).argmax(dim=1).numpy()
        next_obs, rewards, terminations, truncations, infos = envs.step(actions)
        real_next_obs = next_obs.copy()
        if "final_obs" in infos:  # same-step autoreset: the ended episodes' last observations
            for i in np.flatnonzero(infos["_final_obs"]):
                real_next_obs[i] = infos["final_obs"][i]
        if not restarting.any():  # (next-step: a reset's step is no transition)
            if args.buffer == "prioritized":
                rb.add(obs, actions, rewards, real_next_obs, terminations, truncations)
            else:
                rb.add(obs, real_next_obs, actions, rewards, terminations, truncations)
        ended = terminations | truncations
        if args.env_api == "envpool" or args.autoreset_mode == "next_step":
            restarting = ended
        elif args.autoreset_mode == "disabled" and ended.any():
            next_obs, _ = envs.reset(options={"reset_mask": ended})
        obs = next_obs

        if global_step > args.learning_starts and global_step % args.train_frequency == 0:
            loss = train_step(args, rb, sampler, q_network, target_network, optimizer)
            if losses is not None:
                losses.write(f"{global_step} {loss.item().hex()}\n")
                losses.flush()
        if global_step > args.learning_starts \
                and global_step % args.target_network_frequency == 0:
            target_network.load_state_dict(q_network.state_dict())
        if args.checkpoint_dir and global_step % args.checkpoint_every == 0:
            checkpoint.save(args.checkpoint_dir, envs=envs, memory=rb, rngs=rngs, arrays={
                "obs": obs, "step": global_step, "restarting": restarting,
                "q": to_numpy(q_network.state_dict()),
                "target": to_numpy(target_network.state_dict()),
                "optimizer": to_numpy(optimizer.state_dict())})
    envs.close()


def make_envs(args: Args) -> Any:
    """The envs: the vector env in the autoreset mode asked for (same-step, SB3's and
    CleanRL's: every step a transition, the true next observation in info["final_obs"]), or
    the EnvPool front (EnvPool's next-step autoreset), the same time limit in both."""
    if args.env_api == "envpool":
        return fastatari.envpool.make(args.env_id, env_type="gymnasium", num_envs=args.num_envs,
                                      seed=args.seed,
                                      max_episode_steps=args.max_episode_frames // 4)
    return fastatari.make_vec(args.env_id, args.num_envs, num_workers=1,
                              autoreset_mode=args.autoreset_mode,
                              max_num_frames_per_episode=args.max_episode_frames)


def train_step(args: Args, rb: Any, sampler: np.random.Generator, q_network: QNetwork,
               target_network: QNetwork, optimizer: optim.Optimizer) -> torch.Tensor:
    """One update of the Q-network on a batch: CleanRL's TD loss (the prioritized buffer: its
    n-step targets, importance weights and new priorities)."""
    batch: Dict[str, Any]
    if args.buffer == "prioritized":
        data = rb.sample(args.batch_size)
        batch = dict(obs=data.observations, actions=data.actions, next_obs=data.next_observations,
                     rewards=data.rewards, dones=data.dones, gammas=data.discounts,
                     weights=torch.as_tensor(data.weights))
    else:
        data = rb.sample(args.batch_size, sampler)
        batch = dict(obs=data.obs, actions=data.actions, next_obs=data.next_obs,
                     rewards=data.rewards, dones=data.terminated,
                     gammas=np.full(args.batch_size, args.gamma, np.float32), weights=None)
    obs, next_obs = torch.as_tensor(batch["obs"]), torch.as_tensor(batch["next_obs"])
    rewards = torch.as_tensor(batch["rewards"], dtype=torch.float32).flatten()
    dones = torch.as_tensor(batch["dones"], dtype=torch.float32).flatten()
    gammas = torch.as_tensor(batch["gammas"], dtype=torch.float32).flatten()
    actions = torch.as_tensor(batch["actions"], dtype=torch.int64).reshape(-1, 1)
    with torch.no_grad():
        target_max, _ = target_network(next_obs).max(dim=1)
        td_target = rewards + gammas * target_max * (1 - dones)
    old_val = q_network(obs).gather(1, actions).squeeze(1)
    if batch["weights"] is None:
        loss = F.mse_loss(td_target, old_val)
    else:
        errors = td_target - old_val
        loss = (batch["weights"].flatten() * errors.pow(2)).mean()
        rb.update_priorities(data.indices, errors.abs().detach().numpy())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss


if __name__ == "__main__":
    main()
