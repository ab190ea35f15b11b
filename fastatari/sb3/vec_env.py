"""SB3's ``VecEnv`` over :class:`fastatari.AtariVectorEnv` (see :mod:`fastatari.sb3`)."""


from __future__ import annotations

import time
import warnings
from typing import Any, Dict, List, Optional, Sequence, Type, cast

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from fastatari.core.schema import GAME_KEY, INFO_FIELDS, STATE_FIELDS
from fastatari.vector import AtariVectorEnv, make_vec

__all__ = ["SB3AtariVecEnv", "make_vec_env"]

# Per-env info keys copied from the vector env's info into each SB3 info dict: the schema's,
# the vector env's restart flag, and each env's game in a multi-game env.
_PER_ENV_KEYS = tuple(f.name for f in INFO_FIELDS) + ("worker_restarted", "game_index")
# Keys that describe the new episode after a same-step reset (the rest describe the step).
_RESET_KEYS = tuple(f.name for f in STATE_FIELDS)


def make_vec_env(game: str, n_envs: int, seed: Optional[int] = None,
                 **kwargs: Any) -> "SB3AtariVecEnv":
    """Create ``n_envs`` copies of ``game`` as a Stable-Baselines3 ``VecEnv``.

    Parameters
    ----------
    game : str
        ``"breakout"``, ``"Breakout"`` or ``"ALE/Breakout-v5"``.
    n_envs : int
        Number of games.
    seed : int, optional
        Env ``i`` is seeded with ``seed + i`` at the first :meth:`~SB3AtariVecEnv.reset`.
    **kwargs
        :class:`~fastatari.AtariVectorEnv` keywords (``num_workers``,
        ``render_mode="rgb_array"``, ``max_restarts``, ``timeout``, ...) and
        :class:`~fastatari.AtariOptions` fields (``frame_skip``, ``episodic_life``,
        ``clip_rewards``, ...), passed on as they are.

    Returns
    -------
    SB3AtariVecEnv
    """
    if "autoreset_mode" in kwargs or "copy" in kwargs:
        raise TypeError("make_vec_env sets autoreset_mode='same_step' and copy=True itself "
                        "(SB3 keeps references to returned observations)")
    vec = make_vec(game, n_envs, autoreset_mode="same_step", copy=True, **kwargs)
    try:
        venv = SB3AtariVecEnv(vec)
    except BaseException:
        vec.close()
        raise
    if seed is not None:
        venv.seed(seed)
    return venv


class SB3AtariVecEnv(VecEnv):
    """Stable-Baselines3's ``VecEnv`` API over an :class:`~fastatari.AtariVectorEnv`.

    See the module docstring for the mapping. Build it with :func:`make_vec_env`, or wrap a
    vector env created with ``autoreset_mode="same_step"`` and ``copy=True``.

    Parameters
    ----------
    vec : AtariVectorEnv
        The games; owned (closed by :meth:`close`).
    """

    def __init__(self, vec: AtariVectorEnv) -> None:
        if vec.metadata.get("autoreset_mode") != AutoresetMode.SAME_STEP:
            raise ValueError("SB3AtariVecEnv needs an AtariVectorEnv with "
                             "autoreset_mode='same_step' (SB3 resets in the step that ends an "
                             "episode)")
        if not vec.copy:
            raise ValueError("SB3AtariVecEnv needs an AtariVectorEnv with copy=True: SB3 keeps "
                             "the returned observations across steps")
        self.vec = vec
        self._actions: Optional[np.ndarray] = None
        self._t_start = time.perf_counter()
        super().__init__(vec.num_envs, vec.single_observation_space, vec.single_action_space)
        # agent steps per second at the game's 60 Hz, for VecVideoRecorder
        # (SB3 annotates metadata as dict[str, list]; gymnasium's render_fps is an int)
        cast(Dict[str, Any], self.metadata)["render_fps"] = max(1, 60 // vec.options.frame_skip)

    # -- SB3's VecEnv API --------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        """Reset every env (with the seeds from :meth:`seed`, once) and return the observations.

        Returns
        -------
        numpy.ndarray
            ``(n_envs, *observation_space.shape)`` uint8.
        """
        if any(self._options):
            raise NotImplementedError("fastatari's games take no per-env reset options; set "
                                      "the preprocessing options in make_vec_env instead")
        seeds: Optional[List[Optional[int]]] = None
        if any(s is not None for s in self._seeds):
            seeds = [None if s is None else int(s) for s in self._seeds]
        obs, info = self.vec.reset(seed=seeds)
        self.reset_infos = self._split_info(info)
        # seeds and options apply to one reset only (SB3's convention)
        self._reset_seeds()
        self._reset_options()
        self._actions = None
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Store the actions; :meth:`step_wait` steps every env with them."""
        self._actions = np.asarray(actions).reshape(self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        """Step every env with the actions from :meth:`step_async`.

        Returns
        -------
        obs : numpy.ndarray
            New observations (a new episode's first where ``dones[i]``).
        rewards : numpy.ndarray
            float32, shape ``(n_envs,)``.
        dones : numpy.ndarray
            bool, ``terminated | truncated``.
        infos : list of dict
            Per env: fastatari's scalars (``lives``, ``frame_number``, ``episode_frame_number``,
            and ``raw_reward``/``game_over`` with ``clip_rewards``/``episodic_life``) and
            ``TimeLimit.truncated``. Where ``dones[i]``: ``terminal_observation``, ``lives`` at
            the episode's end, and ``episode`` if the game ended; the new episode's ``lives``
            and frame counters are in ``reset_infos[i]``, as with SB3's ``DummyVecEnv``.
        """
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        obs, reward, terminated, truncated, info = self.vec.step(actions)
        dones = terminated | truncated
        infos = self._split_info(info)
        time_limit = truncated & ~terminated
        for i, done in enumerate(dones.tolist()):
            step_info = infos[i]
            step_info["TimeLimit.truncated"] = bool(time_limit[i])
            if done:
                # As in SB3's DummyVecEnv: infos[i] describes the step that ended the episode,
                # reset_infos[i] the new episode (its lives and frame counters).
                self.reset_infos[i] = {key: step_info.pop(key) for key in _RESET_KEYS
                                       if key in step_info}
                step_info["lives"] = int(info["final_info"]["lives"][i])
                step_info["terminal_observation"] = info["final_obs"][i]
        return obs, reward.astype(np.float32), dones, infos

    def _split_info(self, info: Dict[str, Any]) -> List[Dict[str, Any]]:
        """The vector env's array info as one dict per env (SB3's layout)."""
        infos: List[Dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for key in _PER_ENV_KEYS:
            if key not in info:
                continue
            values, present = info[key], info["_" + key].tolist()
            values = values.tolist() if values.ndim == 1 else list(values)  # ram: row arrays
            for i in range(self.num_envs):
                if present[i]:
                    infos[i][key] = values[i]
        if GAME_KEY in info:
            game = info[GAME_KEY]
            t = round(time.perf_counter() - self._t_start, 6)  # Monitor's t: since creation
            for i in np.flatnonzero(info["_" + GAME_KEY]).tolist():
                infos[i]["episode"] = {"r": float(game["r"][i]), "l": int(game["l"][i]),
                                       "t": t}
        return infos

    def close(self) -> None:
        """Stop the worker processes. Safe to call more than once."""
        self.vec.close()

    def seed(self, seed: Optional[int] = None) -> Sequence[Optional[int]]:
        """Seed env ``i`` with ``seed + i`` at the next :meth:`reset` (SB3's convention).

        Parameters
        ----------
        seed : int, optional
            None draws a random base seed, as SB3 does.

        Returns
        -------
        list of int
            The seeds the next reset uses.
        """
        return super().seed(seed)

    def get_images(self) -> Sequence[Optional[np.ndarray]]:
        """Each env's raw RGB screen ``(210, 160, 3)`` with ``render_mode="rgb_array"``;
        otherwise a warning and ``None`` per env, as SB3's ``DummyVecEnv`` does."""
        if self.render_mode != "rgb_array":
            warnings.warn(f"get_images() needs make_vec_env(..., render_mode='rgb_array'); "
                          f"the render mode is {self.render_mode!r}", stacklevel=2)
            return [None] * self.num_envs
        screens = self.vec.render()
        assert screens is not None  # render_mode="rgb_array"
        return list(screens)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> List[Any]:
        """The value of ``attr_name`` for each env in ``indices`` (default: all).

        Every env shares one configuration, so this answers from the vector env:
        ``render_mode``, ``metadata``, ``observation_space``, ``action_space``, ``rom`` and the
        :class:`~fastatari.AtariOptions` fields (``frame_skip``, ``episodic_life``, ...).

        Raises
        ------
        AttributeError
            For any other name (SB3's ``has_attr`` relies on this).
        """
        count = len(list(self._get_indices(indices)))
        return [self._shared_attr(attr_name)] * count

    def _shared_attr(self, name: str) -> Any:
        vec = self.vec
        table = {"render_mode": lambda: vec.render_mode,
                 "metadata": lambda: dict(self.metadata),
                 "observation_space": lambda: vec.single_observation_space,
                 "action_space": lambda: vec.single_action_space,
                 "rom": lambda: vec.rom,
                 "options": lambda: vec.options}
        if name in table:
            return table[name]()
        if name in vec.options.field_names():
            return getattr(vec.options, name)
        raise AttributeError(f"fastatari's sub-envs run in worker processes and expose only "
                             f"{sorted(table)} and the AtariOptions fields to get_attr, "
                             f"not {name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Not supported: the games' options are fixed when the workers start."""
        raise NotImplementedError(f"cannot set {attr_name!r}: fastatari's games are configured "
                                  f"once, in make_vec_env (create a new VecEnv to change them)")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> List[Any]:
        """Call a sub-env method; only ``render`` exists (raw RGB screens).

        Raises
        ------
        NotImplementedError
            For any other method: the games live in worker processes behind a fixed protocol.
        """
        ids = list(self._get_indices(indices))
        if method_name == "render" and not method_args and not method_kwargs:
            if self.render_mode != "rgb_array":
                raise RuntimeError("render needs make_vec_env(..., render_mode='rgb_array')")
            screens = self.vec.render(np.asarray(ids, np.int64))
            assert screens is not None  # render_mode="rgb_array"
            return list(screens)
        raise NotImplementedError(f"env_method({method_name!r}) is not available: fastatari's "
                                  f"games run in worker processes and support only 'render'")

    def env_is_wrapped(self, wrapper_class: Type[Any],
                       indices: VecEnvIndices = None) -> List[bool]:
        """No gymnasium wrappers are involved, but the info already carries ``Monitor``'s
        ``episode`` at each game's end, so this answers True for ``Monitor`` itself (which makes
        ``evaluate_policy`` count games, not lives) and False for anything else."""
        count = len(list(self._get_indices(indices)))
        return [wrapper_class is Monitor] * count

    def __repr__(self) -> str:
        return f"SB3AtariVecEnv({self.vec!r})"
