"""EnvPool's ``env.spec``: the options as a :data:`Config` namedtuple, one env's spaces, and
EnvPool's array specs (``state_array_spec``, ``action_array_spec``) and dm_env specs."""

from __future__ import annotations

import collections
from types import ModuleType
from typing import Any, Dict, List

import gymnasium
import numpy as np

from fastatari.vector.plan import VectorPlan

__all__ = ["ArraySpec", "Config", "EnvPoolSpec", "Players", "State", "import_dm_env"]

#: EnvPool 1.2.x's Atari configuration, field for field: ``env.spec.config``.
Config = collections.namedtuple("Config", [
    "num_envs", "batch_size", "num_threads", "max_num_players", "thread_affinity_offset",
    "base_path", "seed", "env_seed", "gym_reset_return_info", "max_episode_steps", "stack_num",
    "frame_skip", "noop_max", "zero_discount_on_life_loss", "episodic_life", "reward_clip",
    "use_fire_reset", "img_height", "img_width", "task", "mode", "difficulty",
    "full_action_space", "repeat_action_probability", "use_inter_area_resize", "gray_scale"])

#: The dm_env API's observation (``TimeStep.observation``), EnvPool's names and order.
State = collections.namedtuple("State", ["env_id", "players", "obs", "lives", "reward",
                                         "terminated", "ram"])
#: ``State.players``, as EnvPool names it (its repr: ``players(env_id=...)``); pickled by its
#: qualified name, this module's ``Players``.
Players = collections.namedtuple("Players", ["env_id"])
Players.__name__ = "players"

_INT32 = np.iinfo(np.int32)
_FLOAT32 = np.finfo(np.float32)
# EnvPool's float bounds: its C++ Spec<float> default is numeric_limits<float>::min(), the
# smallest positive float, not the lowest; kept so that the specs compare equal to EnvPool's.
_FLOATS = (float(_FLOAT32.tiny), float(_FLOAT32.max))


class ArraySpec:
    """One array of EnvPool's ``state_array_spec`` or ``action_array_spec``.

    Attributes
    ----------
    dtype : numpy.dtype
    shape : list of int
        One env's shape; a leading ``-1`` is one entry per player (one here).
    minimum, maximum : int, float or bool
    is_discrete : bool
        Always False for Atari, as in EnvPool.
    """

    def __init__(self, dtype: Any, shape: List[int], minimum: Any, maximum: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = list(shape)
        self.minimum = minimum
        self.maximum = maximum
        self.is_discrete = False

    def __repr__(self) -> str:
        return (f"ArraySpec(shape={self.shape}, dtype={self.dtype}, minimum={self.minimum}, "
                f"maximum={self.maximum})")


def _int32(shape: List[int], minimum: int = int(_INT32.min),
           maximum: int = int(_INT32.max)) -> ArraySpec:
    return ArraySpec(np.int32, shape, minimum, maximum)


class EnvPoolSpec:
    """EnvPool's ``env.spec`` (what ``envpool.make_spec`` returns) for one Atari config.

    Parameters
    ----------
    config : Config
        The options (:attr:`config`).
    plan : fastatari.vector.VectorPlan
        The vector env that plays ``config`` (:attr:`plan`): its action set, its checks.
    spaces : module, optional
        Where :attr:`observation_space`'s and :attr:`action_space`'s classes come from:
        ``gymnasium.spaces`` (the default, as in EnvPool 1.x) or ``gym.spaces`` (the gym API).

    Attributes
    ----------
    config : Config
    plan : fastatari.vector.VectorPlan
    observation_space, action_space
        One env's ``Box`` (uint8, ``(stack_num * channels, img_height, img_width)``) and
        ``Discrete(num_actions)``.
    gymnasium_observation_space, gymnasium_action_space
        The same, always gymnasium's.
    reward_threshold : None
    """

    reward_threshold = None

    def __init__(self, config: Config, plan: VectorPlan,
                 spaces: ModuleType = gymnasium.spaces) -> None:
        self.config = config
        self.plan = plan
        self.num_actions = plan.num_actions
        channels = 1 if config.gray_scale else 3
        self.obs_shape = (config.stack_num * channels, config.img_height, config.img_width)
        self.observation_space = spaces.Box(0, 255, self.obs_shape, np.uint8)
        self.action_space = spaces.Discrete(self.num_actions)
        if spaces is gymnasium.spaces:
            self.gymnasium_observation_space = self.observation_space
            self.gymnasium_action_space = self.action_space
        else:
            self.gymnasium_observation_space = gymnasium.spaces.Box(0, 255, self.obs_shape,
                                                                    np.uint8)
            self.gymnasium_action_space = gymnasium.spaces.Discrete(self.num_actions)

    @property
    def state_array_spec(self) -> Dict[str, ArraySpec]:
        """EnvPool's state arrays (keys, order, dtypes, shapes and bounds of EnvPool 1.2.x's
        Atari): ``"obs"``, ``"reward"``, ``"done"``, ``"info:lives"``, ``"info:ram"``, ..."""
        return {
            "info:env_id": _int32([]),
            "info:players.env_id": _int32([-1]),
            "elapsed_step": _int32([]),
            "done": ArraySpec(np.bool_, [], False, True),
            "reward": ArraySpec(np.float32, [-1], *_FLOATS),
            "discount": ArraySpec(np.float32, [-1], 0.0, 1.0),
            "step_type": _int32([]),
            "trunc": ArraySpec(np.bool_, [], False, True),
            "obs": ArraySpec(np.uint8, list(self.obs_shape), 0, 255),
            "info:lives": _int32([-1]),
            "info:reward": ArraySpec(np.float32, [-1], *_FLOATS),
            "info:terminated": _int32([-1], 0, 1),
            "info:ram": ArraySpec(np.uint8, [128], 0, 255),
        }

    @property
    def action_array_spec(self) -> Dict[str, ArraySpec]:
        """EnvPool's action arrays: ``"env_id"``, ``"players.env_id"`` and ``"action"`` (int32
        in ``[0, num_actions)``)."""
        return {"env_id": _int32([]), "players.env_id": _int32([-1]),
                "action": _int32([-1], 0, self.num_actions - 1)}

    def observation_spec(self) -> State:
        """The dm_env specs of ``TimeStep.observation``, as a :data:`State` (needs dm-env).

        As in EnvPool, the int32 arrays in ``[0, 1]`` are ``DiscreteArray``; the others
        ``BoundedArray`` with the per-player dimension dropped.
        """
        specs = {key.split(":")[-1]: _dm_spec(key.replace(":", ".").split(".")[-1], spec)
                 for key, spec in self.state_array_spec.items()
                 if key == "obs" or key.startswith("info:")}
        return State(players=Players(specs.pop("players.env_id")), **specs)

    def action_spec(self) -> Any:
        """The dm_env spec of the action: ``DiscreteArray(num_values=num_actions)`` (needs
        dm-env)."""
        return _dm_spec("action", self.action_array_spec["action"])

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.config._asdict().items())
        return f"AtariEnvSpec({fields})"


def import_dm_env() -> ModuleType:
    """The ``dm_env`` module.

    Raises
    ------
    ImportError
        Without the dm-env package, naming what to install.
    """
    try:
        import dm_env
    except ImportError as error:
        raise ImportError("fastatari.envpool's dm_env API (env_type='dm', make_dm, "
                          "observation_spec(), action_spec()) needs the dm-env package: pip "
                          "install dm-env; or use env_type='gymnasium'") from error
    return dm_env


def _dm_spec(name: str, spec: ArraySpec) -> Any:
    """EnvPool's ``dm_spec_transform``: a one-element integer array starting at 0 is a
    ``DiscreteArray``; anything else a ``BoundedArray``."""
    specs = import_dm_env().specs
    one_element = int(np.prod(np.abs(spec.shape))) == 1
    if (one_element and spec.dtype.kind == "i" and spec.minimum == 0
            and spec.maximum < 2 ** 20):
        return specs.DiscreteArray(spec.maximum + 1, spec.dtype, name)
    return specs.BoundedArray([s for s in spec.shape if s != -1], spec.dtype, spec.minimum,
                              spec.maximum, name)
