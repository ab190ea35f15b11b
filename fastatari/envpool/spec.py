"""EnvPool's ``env.spec``: the options as a :data:`Config` namedtuple and one env's spaces."""

from __future__ import annotations

import collections
from typing import Any

__all__ = ["Config", "EnvPoolSpec"]

#: EnvPool 1.2.x's Atari configuration, field for field: ``env.spec.config``.
Config = collections.namedtuple("Config", [
    "num_envs", "batch_size", "num_threads", "max_num_players", "thread_affinity_offset",
    "base_path", "seed", "env_seed", "gym_reset_return_info", "max_episode_steps", "stack_num",
    "frame_skip", "noop_max", "zero_discount_on_life_loss", "episodic_life", "reward_clip",
    "use_fire_reset", "img_height", "img_width", "task", "mode", "difficulty",
    "full_action_space", "repeat_action_probability", "use_inter_area_resize", "gray_scale"])


class EnvPoolSpec:
    """EnvPool's ``env.spec``: the options as :attr:`config` (a :data:`Config` namedtuple) and
    one env's spaces."""

    reward_threshold = None

    def __init__(self, config: Config, observation_space: Any, action_space: Any) -> None:
        self.config = config
        self.observation_space = observation_space
        self.action_space = action_space

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.config._asdict().items())
        return f"AtariEnvSpec({fields})"
