"""PPO on Atari, one file, top to bottom: fastatari's EnvPool-style envs and a Nature CNN.

Written in the layout of CleanRL's ``ppo_atari_envpool.py`` (arguments, seeding, envs, agent,
rollout, advantages, update), so it can be read and compared section by section. The envs come
from ``envpool.make(...)``; ``--backend`` picks the module, and that import is the only line
that differs between fastatari and EnvPool::

    python examples/ppo_atari.py --env-id Breakout-v5 --total-timesteps 10000000
    python examples/ppo_atari.py --backend envpool           # the same run on EnvPool
    python examples/ppo_atari.py --total-timesteps 2048 --num-envs 4 --device cpu  # smoke run

It prints a progress line every ``--log-every`` iterations and a final ``SPS:`` line: agent
steps per second over the whole run (acting, env stepping and learning), then the env-only rate.

Needs torch (``pip install "fastatari[rl]"`` brings it).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import random
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.categorical import Categorical


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------
def arg(default: Any, doc: str) -> Any:
    """A dataclass field that also carries its ``--help`` text."""
    return field(default=default, metadata={"help": doc})


@dataclass
class Args:
    seed: int = arg(1, "seed of python, numpy, torch and the envs")
    torch_deterministic: bool = arg(True, "torch.backends.cudnn.deterministic")
    device: str = arg("auto", "'cpu', 'cuda' or 'auto' (cuda when available)")
    torch_threads: int = arg(0, "torch CPU threads (0: torch's default)")
    backend: str = arg("fastatari", "'fastatari' or 'envpool': where envpool.make comes from")
    env_id: str = arg("Breakout-v5", "EnvPool task id")
    num_envs: int = arg(8, "parallel games")
    num_threads: int = arg(0, "env worker threads/processes (0: the backend's default)")
    max_episode_steps: int = arg(27000, "agent steps before a game is truncated")
    total_timesteps: int = arg(10_000_000, "agent steps over all envs")
    learning_rate: float = arg(2.5e-4, "Adam learning rate")
    anneal_lr: bool = arg(True, "decay the learning rate linearly to 0")
    num_steps: int = arg(128, "steps per env per rollout")
    gamma: float = arg(0.99, "discount")
    gae_lambda: float = arg(0.95, "GAE lambda")
    num_minibatches: int = arg(4, "minibatches per epoch")
    update_epochs: int = arg(4, "epochs over each rollout")
    norm_adv: bool = arg(True, "normalise advantages per minibatch")
    clip_coef: float = arg(0.1, "policy ratio clip")
    clip_vloss: bool = arg(True, "clip the value loss too")
    ent_coef: float = arg(0.01, "entropy bonus")
    vf_coef: float = arg(0.5, "value loss weight")
    max_grad_norm: float = arg(0.5, "gradient norm clip")
    target_kl: Optional[float] = arg(None, "stop the epochs early above this approx. KL")
    log_every: int = arg(10, "print a progress line every this many iterations")


def parse_args() -> argparse.Namespace:
    """Args' fields as ``--kebab-case`` flags (bools get ``--no-...`` too), plus sizes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default,
                                help=f.metadata["help"])
        else:
            kind = {"int": int, "float": float, "str": str, "Optional[float]": float}[str(f.type)]
            parser.add_argument(flag, type=kind, default=f.default, help=f.metadata["help"])
    args = parser.parse_args()
    if args.backend not in ("fastatari", "envpool"):
        parser.error(f"--backend must be 'fastatari' or 'envpool', got {args.backend!r}")
    args.batch_size = args.num_envs * args.num_steps
    args.minibatch_size = args.batch_size // args.num_minibatches
    args.num_iterations = max(1, args.total_timesteps // args.batch_size)
    return args


# ---------------------------------------------------------------------------------------------
# Agent: the Nature CNN (Mnih et al., 2015) with policy and value heads
# ---------------------------------------------------------------------------------------------
def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Module:
    """Orthogonal weights, constant bias: PPO's usual initialisation."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_shape: tuple, num_actions: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            layer_init(nn.Conv2d(obs_shape[0], 32, 8, stride=4)), nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(),
            nn.Flatten(),
        )
        with torch.no_grad():  # 3136 for 84x84; measured so other screen sizes work
            flat = self.conv(torch.zeros(1, *obs_shape)).shape[1]
        self.body = nn.Sequential(self.conv, layer_init(nn.Linear(flat, 512)), nn.ReLU())
        self.actor = layer_init(nn.Linear(512, num_actions), std=0.01)  # near-uniform start
        self.critic = layer_init(nn.Linear(512, 1), std=1.0)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.body(obs / 255.0)).squeeze(-1)

    def act(self, obs: torch.Tensor, action: Optional[torch.Tensor] = None):
        """Sample (or score) actions: ``(action, log_prob, entropy, value)``."""
        hidden = self.body(obs / 255.0)
        dist = Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden).squeeze(-1)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask`` is 1 (the real transitions)."""
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


# ---------------------------------------------------------------------------------------------
# Episode statistics from EnvPool's info (both backends fill it the same way)
# ---------------------------------------------------------------------------------------------
class GameStats:
    """Returns and lengths of whole games: ``info["reward"]`` is the unclipped reward and
    ``info["terminated"]`` marks a game's end (a life loss alone ends only the episode)."""

    def __init__(self, num_envs: int, window: int = 20) -> None:
        self.returns = np.zeros(num_envs)
        self.recent: collections.deque = collections.deque(maxlen=window)
        self.games = 0

    def update(self, info: dict, truncated: np.ndarray) -> None:
        ids = info["env_id"]
        self.returns[ids] += info["reward"]
        over = info["terminated"].astype(bool) | truncated
        for i, length in zip(ids[over], info["elapsed_step"][over], strict=True):
            self.recent.append((self.returns[i], int(length)))
            self.returns[i] = 0.0
            self.games += 1

    def summary(self) -> str:
        if not self.recent:
            return "no game finished yet"
        r, n = np.mean([x[0] for x in self.recent]), np.mean([x[1] for x in self.recent])
        return f"return {r:.1f}, length {n:.0f} (last {len(self.recent)} of {self.games} games)"


def main() -> None:
    args = parse_args()

    # -----------------------------------------------------------------------------------------
    # Seeding and device
    # -----------------------------------------------------------------------------------------
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)

    # -----------------------------------------------------------------------------------------
    # Envs: CleanRL's EnvPool settings (episodic life, clipped rewards, fire reset, no sticky
    # actions). Only the import differs between the backends.
    # -----------------------------------------------------------------------------------------
    if args.backend == "envpool":
        import envpool
    else:
        from fastatari import envpool
    envs = envpool.make(args.env_id, env_type="gymnasium", num_envs=args.num_envs,
                        num_threads=args.num_threads, seed=args.seed, episodic_life=True,
                        reward_clip=True, max_episode_steps=args.max_episode_steps)
    obs_shape = envs.observation_space.shape  # EnvPool's spaces describe one env
    num_actions = envs.action_space.n
    print(f"{args.backend}: {args.env_id} x {args.num_envs}, obs {obs_shape}, "
          f"{num_actions} actions, device {device}", flush=True)

    agent = Agent(obs_shape, num_actions).to(device)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # -----------------------------------------------------------------------------------------
    # Rollout storage
    # -----------------------------------------------------------------------------------------
    steps, n = args.num_steps, args.num_envs
    obs = torch.zeros((steps, n, *obs_shape), dtype=torch.uint8, device=device)
    actions = torch.zeros((steps, n), dtype=torch.long, device=device)
    logprobs = torch.zeros((steps, n), device=device)
    rewards = torch.zeros((steps, n), device=device)
    # dones[t]: obs[t] is an episode's last observation. EnvPool resets that env on the next
    # step and ignores the action, so those transitions are left out of the loss.
    dones = torch.zeros((steps, n), device=device)
    values = torch.zeros((steps, n), device=device)

    stats = GameStats(n)
    global_step = 0
    env_time = 0.0
    start = time.perf_counter()
    next_obs_np, _ = envs.reset()
    next_obs = torch.as_tensor(next_obs_np, device=device)
    next_done = torch.zeros(n, device=device)

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        # -------------------------------------------------------------------------------------
        # Rollout
        # -------------------------------------------------------------------------------------
        for t in range(steps):
            global_step += n
            obs[t] = next_obs
            dones[t] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs)
            actions[t], logprobs[t], values[t] = action, logprob, value

            tick = time.perf_counter()
            next_obs_np, reward, terminated, truncated, info = envs.step(action.cpu().numpy())
            env_time += time.perf_counter() - tick

            stats.update(info, truncated)
            rewards[t] = torch.as_tensor(reward, device=device)
            next_obs = torch.as_tensor(next_obs_np, device=device)
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32,
                                        device=device)

        # -------------------------------------------------------------------------------------
        # Advantages: GAE(lambda), cut at episode ends
        # -------------------------------------------------------------------------------------
        with torch.no_grad():
            next_value = agent.value(next_obs)
            advantages = torch.zeros_like(rewards)
            gae = torch.zeros(n, device=device)
            for t in reversed(range(steps)):
                if t == steps - 1:
                    not_done, bootstrap = 1.0 - next_done, next_value
                else:
                    not_done, bootstrap = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * bootstrap * not_done - values[t]
                gae = delta + args.gamma * args.gae_lambda * not_done * gae
                advantages[t] = gae
            returns = advantages + values

        b_obs = obs.reshape((-1, *obs_shape))
        b_actions, b_logprobs = actions.reshape(-1), logprobs.reshape(-1)
        b_advantages, b_returns = advantages.reshape(-1), returns.reshape(-1)
        b_values, b_valid = values.reshape(-1), 1.0 - dones.reshape(-1)

        # -------------------------------------------------------------------------------------
        # PPO update: clipped policy ratio, (clipped) value loss, entropy bonus
        # -------------------------------------------------------------------------------------
        order = np.arange(args.batch_size)
        clip_fracs = []
        for _epoch in range(args.update_epochs):
            np.random.shuffle(order)
            for lo in range(0, args.batch_size, args.minibatch_size):
                mb = torch.as_tensor(order[lo:lo + args.minibatch_size], device=device)
                valid = b_valid[mb]

                def mean(x: torch.Tensor, valid: torch.Tensor = valid) -> torch.Tensor:
                    return masked_mean(x, valid)

                _, new_logprob, entropy, new_value = agent.act(b_obs[mb], b_actions[mb])
                log_ratio = new_logprob - b_logprobs[mb]
                ratio = log_ratio.exp()
                with torch.no_grad():
                    approx_kl = mean((ratio - 1) - log_ratio)  # the low-variance estimator
                    clip_fracs.append(mean(((ratio - 1.0).abs() > args.clip_coef).float()))

                adv = b_advantages[mb]
                if args.norm_adv:
                    centred = adv - mean(adv)
                    adv = centred / (mean(centred ** 2).sqrt() + 1e-8)
                pg_loss = mean(torch.max(
                    -adv * ratio,
                    -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)))

                if args.clip_vloss:
                    v_clipped = b_values[mb] + (new_value - b_values[mb]).clamp(
                        -args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * mean(torch.max((new_value - b_returns[mb]) ** 2,
                                                  (v_clipped - b_returns[mb]) ** 2))
                else:
                    v_loss = 0.5 * mean((new_value - b_returns[mb]) ** 2)
                loss = pg_loss - args.ent_coef * mean(entropy) + args.vf_coef * v_loss

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        # -------------------------------------------------------------------------------------
        # Progress
        # -------------------------------------------------------------------------------------
        if iteration % args.log_every == 0 or iteration == args.num_iterations:
            elapsed = time.perf_counter() - start
            print(f"iter {iteration}/{args.num_iterations} step {global_step} "
                  f"SPS {int(global_step / elapsed)} env_SPS {int(global_step / env_time)} | "
                  f"loss pg {pg_loss.item():.3f} v {v_loss.item():.3f} "
                  f"kl {approx_kl.item():.4f} clip {torch.stack(clip_fracs).mean().item():.3f}"
                  f" | {stats.summary()}", flush=True)

    elapsed = time.perf_counter() - start
    envs.close()
    print(f"SPS: {int(global_step / elapsed)} ({global_step} steps in {elapsed:.1f} s, "
          f"backend {args.backend}); env-only SPS: {int(global_step / env_time)}", flush=True)


if __name__ == "__main__":
    main()
