"""PufferLib front end: a native ``pufferlib.PufferEnv`` over :class:`fastatari.AtariVectorEnv`.

::

    import pufferlib.vector
    import fastatari.puffer

    vecenv = pufferlib.vector.make(fastatari.puffer.make, backend=pufferlib.PufferEnv,
                                   env_kwargs=dict(game="breakout", num_envs=8))
    obs, infos = vecenv.reset(seed=0)                  # obs: (8, 4, 84, 84) uint8

One :class:`AtariPufferEnv` holds ``num_envs`` games, one PufferLib agent each, stepped by
fastatari's worker processes: PufferLib's native backend (``backend=pufferlib.PufferEnv``) is
the one to use, since fastatari already runs the games in parallel. PufferLib's ``Serial`` and
``Multiprocessing`` backends work too, each of their envs holding its own fastatari vector env.
Under ``Multiprocessing``, pass ``num_workers=1`` in ``env_kwargs`` (one fastatari worker per
PufferLib worker) and keep PufferLib's default of one env per worker (with more, PufferLib seeds
env ``k`` of worker ``i`` with ``s + i + k``: the same seeds on different workers); PufferLib
also builds one env in the trainer's process to read the spaces, whose fastatari workers idle
until ``close``.

What PufferLib sees, and how it maps to fastatari:

* **Buffers.** Observations, rewards, terminals, truncations and masks are written in place
  into the arrays PufferLib's vector backend supplies (``buf``), or into the env's own
  (``buf=None``, PufferLib's ``set_buffers``). Rewards become float32.
* **Autoreset.** Like PufferLib's native envs, a game that ends is reset in the same step
  (fastatari's ``autoreset_mode="same_step"``): ``terminals``/``truncations`` mark the step that
  ended it and the observation is the next episode's first.
* **Seeding.** ``reset(seed=s)`` seeds game ``j`` with ``s * num_envs + j``, PufferLib's own
  rule for native envs (``pufferlib/ocean/env_binding.h``), so that the per-env seeds
  ``s + i`` its ``Serial`` and ``Multiprocessing`` backends pass give every game its own seed:
  with one env per PufferLib worker (its default), the games of worker ``i`` are, byte for
  byte, envs ``i * num_envs`` onwards of ``make_vec(game, num_workers * num_envs)`` after
  ``reset(seed=s * num_envs)``. A ``reset()`` without a seed uses ``seed`` the first time,
  then continues each game's generators.
* **Episode statistics.** ``infos`` is a list with one dict per *game* that ended in the step
  (not per life under ``episodic_life``/``terminal_on_life_loss``), with the keys PufferLib's
  ``EpisodeStats`` uses: ``episode_return`` (the raw, unclipped return) and ``episode_length``
  (agent steps). With several games the dict also holds them under the game's ROM id
  (``{"breakout": {"episode_return": ...}}``), which PufferLib's logger reports as
  ``breakout/episode_return``.

Single games also run through PufferLib's own Gymnasium emulation,
``pufferlib.emulation.GymnasiumPufferEnv(env_creator=fastatari.AtariEnv, env_kwargs=...)``
(next-step autoreset, one env per game, the env's whole info every step).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from gymnasium.vector import AutoresetMode

try:
    import pufferlib
except ImportError as e:  # pragma: no cover - exercised only without PufferLib
    raise ImportError('fastatari.puffer needs PufferLib: pip install "fastatari[puffer]"') from e

from fastatari.core import validate
from fastatari.core.schema import GAME_KEY
from fastatari.vector import AtariVectorEnv, make_vec

__all__ = ["AtariPufferEnv", "make"]


def make(game: str | Sequence[str], num_envs: int, buf: Optional[Mapping[str, np.ndarray]] = None,
         seed: Optional[int] = 0, **options: Any) -> "AtariPufferEnv":
    """Create a native PufferLib env of ``num_envs`` games (the env creator PufferLib calls).

    Parameters
    ----------
    game : str or sequence of str
        ``"breakout"``, ``"Breakout"`` or ``"ALE/Breakout-v5"``; or one name per env, as
        :func:`fastatari.make_vec` takes it.
    num_envs : int
        Games, each one PufferLib agent.
    buf : mapping of str to numpy.ndarray, optional
        The arrays PufferLib's vector backends pass (``observations``, ``rewards``,
        ``terminals``, ``truncations``, ``masks``, ``actions``, ``teacher_actions``), one row per
        game; None allocates them.
    seed : int, optional
        The seed of the first :meth:`~AtariPufferEnv.reset` that gets none.
    **options
        :class:`~fastatari.AtariVectorEnv` keywords (``num_workers``, ``timeout``,
        ``render_mode="rgb_array"``, ...) and :class:`~fastatari.AtariOptions` fields
        (``frame_skip``, ``episodic_life``, ``full_action_space``, ...).

    Returns
    -------
    AtariPufferEnv
    """
    if "autoreset_mode" in options or "copy" in options:
        raise TypeError("fastatari.puffer.make sets autoreset_mode='same_step' and copy=False "
                        "itself (PufferLib's envs reset in the step that ends an episode and "
                        "write into its buffers)")
    validate.check_seed(seed)  # before any worker starts
    vec = make_vec(game, num_envs, autoreset_mode="same_step", copy=False, **options)
    try:
        return AtariPufferEnv(vec, buf=buf, seed=seed)
    except BaseException:
        vec.close()
        raise


class AtariPufferEnv(pufferlib.PufferEnv):
    """PufferLib's native env API over an :class:`~fastatari.AtariVectorEnv`.

    See the module docstring for the mapping. Build it with :func:`make`.

    Parameters
    ----------
    vec : AtariVectorEnv
        The games, created with ``autoreset_mode="same_step"`` and ``copy=False``; owned
        (closed by :meth:`close`).
    buf : mapping of str to numpy.ndarray, optional
        PufferLib's buffers (see :func:`make`).
    seed : int, optional
        The seed of the first :meth:`reset` that gets none.

    Attributes
    ----------
    vec : AtariVectorEnv
        The games (``vec.games``, ``vec.get_action_meanings()``, ...).
    """

    def __init__(self, vec: AtariVectorEnv, buf: Optional[Mapping[str, np.ndarray]] = None,
                 seed: Optional[int] = 0) -> None:
        if vec.autoreset_mode is not AutoresetMode.SAME_STEP or vec.copy:
            raise ValueError("AtariPufferEnv needs an AtariVectorEnv with "
                             "autoreset_mode='same_step' and copy=False; use "
                             "fastatari.puffer.make")
        self.vec = vec
        self.num_agents = vec.num_envs
        self.single_observation_space = vec.single_observation_space
        self.single_action_space = vec.single_action_space
        self.render_mode = vec.render_mode
        if buf is not None:
            _check_buf(buf, self.num_agents, self.single_observation_space.shape)
        self._first_seed = validate.check_seed(seed)
        self._multi = len(vec.game_names) > 1
        super().__init__(buf)

    def reset(self, seed: Optional[int] = None) -> Tuple[np.ndarray, List[Dict[str, Any]]]:
        """Reset every game and write the first observations into :attr:`observations`.

        Parameters
        ----------
        seed : int, optional
            Game ``j`` gets the seed ``seed * num_agents + j`` (PufferLib's rule for native
            envs). None: the constructor's ``seed`` the first time, later the games'
            generators continue.

        Returns
        -------
        observations : numpy.ndarray
            The buffer, ``(num_agents, *single_observation_space.shape)`` uint8.
        infos : list
            Empty.
        """
        seed = validate.check_seed(seed)
        if seed is None:
            seed = self._first_seed
        self._first_seed = None
        obs, _ = self.vec.reset(seed=None if seed is None else seed * self.num_agents)
        self.observations[:] = obs
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        return self.observations, []

    def step(self, actions: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                 List[Dict[str, Any]]]:
        """Step every game; ended games reset in the same step.

        Parameters
        ----------
        actions : numpy.ndarray
            ``(num_agents,)`` integers in ``single_action_space``.

        Returns
        -------
        observations, rewards, terminals, truncations : numpy.ndarray
            The buffers, written in place (rewards float32).
        infos : list of dict
            One ``{"episode_return", "episode_length"}`` per game that ended (see the module
            docstring).
        """
        obs, rewards, terminated, truncated, info = self.vec.step(actions)
        self.observations[:] = obs
        self.rewards[:] = rewards
        self.terminals[:] = terminated
        self.truncations[:] = truncated
        return (self.observations, self.rewards, self.terminals, self.truncations,
                self._episode_infos(info))

    def _episode_infos(self, info: Dict[str, Any]) -> List[Dict[str, Any]]:
        if GAME_KEY not in info:
            return []
        game = info[GAME_KEY]
        infos = []
        for i in np.flatnonzero(info["_" + GAME_KEY]).tolist():
            stats: Dict[str, Any] = {"episode_return": float(game["r"][i]),
                                     "episode_length": int(game["l"][i])}
            if self._multi:
                stats[self.vec.games[i]] = dict(stats)
            infos.append(stats)
        return infos

    def render(self) -> Optional[np.ndarray]:
        """Game 0's raw RGB screen ``(210, 160, 3)`` with ``render_mode="rgb_array"`` (PufferLib
        renders its native envs' first env)."""
        screens = self.vec.render(0)
        return None if screens is None else screens[0]

    def close(self) -> None:
        """Stop the worker processes. Safe to call more than once."""
        self.vec.close()

    def __repr__(self) -> str:
        return f"AtariPufferEnv({self.vec!r})"


# PufferLib's buffers (the keys its set_buffers reads), with the dtype kinds this env accepts
_BUF_DTYPES = {"observations": ("u", "uint8"), "rewards": ("f", "a float dtype"),
               "terminals": ("b", "bool"), "truncations": ("b", "bool"), "masks": ("b", "bool"),
               "actions": ("iu", "an integer dtype"), "teacher_actions": ("iu", "an integer dtype")}


def _check_buf(buf: Mapping[str, np.ndarray], num_agents: int, obs_shape: Tuple[int, ...]) -> None:
    """Raise unless ``buf`` holds writable arrays of the shapes and dtypes this env writes and
    PufferLib's ``set_buffers`` reads, one row per game: ``TypeError`` for what is not a
    mapping of arrays, ``ValueError`` for a missing key, a shape, a dtype or a read-only array.
    """
    if not isinstance(buf, Mapping):
        raise TypeError(f"buf must be a mapping of arrays (PufferLib's buffers), "
                        f"got {type(buf).__name__}")
    missing = [key for key in _BUF_DTYPES if key not in buf]
    if missing:
        raise ValueError(f"buf lacks {missing}: PufferLib's buffers are {list(_BUF_DTYPES)}")
    for key, (kinds, kind_name) in _BUF_DTYPES.items():
        array = buf[key]
        shape = (num_agents, *obs_shape) if key == "observations" else (num_agents,)
        if not isinstance(array, np.ndarray):
            raise TypeError(f"buf[{key!r}] must be a numpy array, got {type(array).__name__}")
        if array.shape != shape:
            raise ValueError(f"buf[{key!r}] has shape {array.shape}, expected {shape} "
                             f"({num_agents} games, one agent each)")
        if array.dtype.kind not in kinds or (key == "observations" and array.itemsize != 1):
            raise ValueError(f"buf[{key!r}] has dtype {array.dtype}, expected {kind_name}")
        if not array.flags.writeable:
            raise ValueError(f"buf[{key!r}] is read-only: the env writes into it")
