"""Stable-Baselines3 front end: an SB3 ``VecEnv`` over :class:`fastatari.AtariVectorEnv`
(:mod:`~fastatari.sb3.vec_env`), and SB3's ``ReplayBuffer`` storing each frame once
(:mod:`~fastatari.sb3.replay_buffer`; also :class:`fastatari.replay.ReplayBuffer`).

::

    from stable_baselines3 import PPO
    from fastatari.sb3 import make_vec_env

    venv = make_vec_env("breakout", n_envs=8, seed=0, episodic_life=True, clip_rewards=True)
    model = PPO("CnnPolicy", venv).learn(1_000_000)

What SB3 sees, and how it maps to fastatari:

* **Autoreset.** The games run in ``same_step`` mode, as SB3 expects: an env that ends an
  episode is reset in the same step; ``infos[i]["terminal_observation"]`` holds the ended
  episode's last observation and the returned observation is the new episode's first.
* **dones.** ``terminated | truncated``; ``infos[i]["TimeLimit.truncated"]`` is
  ``truncated and not terminated`` (SB3's convention, used to bootstrap the value).
* **Episode statistics.** ``infos[i]["episode"] = {"r", "l", "t"}`` when a *game* ends (not at
  each life loss under ``episodic_life``/``terminal_on_life_loss``), as SB3's ``Monitor`` does
  when placed before ``AtariWrapper``: ``r`` is the raw (unclipped) return, ``l`` the agent steps
  of the game and ``t`` the seconds since this VecEnv was created (Monitor's meaning of ``t``).
  :meth:`env_is_wrapped` therefore answers True for ``Monitor``, so ``evaluate_policy`` counts
  games rather than lives. Do not add ``VecMonitor``: it would count lives.
* **Observations.** fastatari's default layout ``(stack_size, H, W)`` uint8 is the
  channel-first image SB3's ``CnnPolicy`` wants, so no ``VecTransposeImage`` is added and no
  ``VecFrameStack`` is needed (the stack is built in the workers). ``channels_last=True`` gives
  ``(H, W, k)``, which SB3 transposes itself. RGB with the default layout is
  ``(k, H, W, 3)``, not an image to SB3: use ``channels_last=True`` for RGB with ``CnnPolicy``.
* **Seeding.** ``seed`` (or SB3's :meth:`seed`, which ``PPO(seed=...)`` calls) gives env ``i``
  the seed ``seed + i`` at the next :meth:`reset`; later resets continue the generators.
"""

try:
    import stable_baselines3  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without SB3
    raise ImportError('fastatari.sb3 needs Stable-Baselines3: pip install "fastatari[rl]"') from e

from fastatari.sb3.replay_buffer import ReplayBuffer, load_replay_buffer  # noqa: E402
from fastatari.sb3.vec_env import SB3AtariVecEnv, make_vec_env  # noqa: E402

__all__ = ["ReplayBuffer", "SB3AtariVecEnv", "load_replay_buffer", "make_vec_env"]
