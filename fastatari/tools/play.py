"""Play a game with a simple policy, optionally recording a side-by-side video.

The engine behind ``fastatari play``; the command line lives in :mod:`fastatari.cli`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from gymnasium import spaces

from fastatari.env import AtariEnv

__all__ = ["POLICIES", "PlayResult", "play", "random_policy"]

#: observation -> action: an int, or with ``continuous`` a float32 ``(radius, theta, fire)``
Policy = Callable[[np.ndarray], Any]


def random_policy(env: AtariEnv, seed: Optional[int]) -> Policy:
    """Uniformly random actions from a generator of its own, so a seed fixes the play (with
    ``continuous``: uniform within the action space's bounds)."""
    rng = np.random.default_rng(seed)
    space = env.action_space
    if isinstance(space, spaces.Box):  # continuous
        low, high = space.low, space.high
        return lambda observation: rng.uniform(low, high).astype(np.float32)
    if not isinstance(space, spaces.Discrete):
        raise TypeError(f"random_policy needs a Discrete or Box action space, got {space}")
    n = int(space.n)
    return lambda observation: int(rng.integers(n))


#: Policy name -> factory ``(env, seed) -> policy(observation) -> action``.
POLICIES: Dict[str, Callable[[AtariEnv, Optional[int]], Policy]] = {"random": random_policy}


@dataclass
class PlayResult:
    """What :func:`play` did.

    Attributes
    ----------
    episodes : list of (float, int)
        ``(return, length in agent steps)`` of each episode that ended.
    unfinished : (float, int)
        Return and length so far of the episode still running at the last step.
    steps : int
    seconds : float
        Wall time of the loop (recording included).
    frames_written : int
        Video frames written (0 without a video).
    """

    episodes: List[Tuple[float, int]] = field(default_factory=list)
    unfinished: Tuple[float, int] = (0.0, 0)
    steps: int = 0
    seconds: float = 0.0
    frames_written: int = 0


def play(game: str, steps: int, *, policy: str = "random", seed: Optional[int] = 0,
         record: Optional[str] = None, fps: Optional[float] = None, all_frames: bool = False,
         follow_symlinks: bool = False,
         on_episode: Optional[Callable[[int, float, int], None]] = None,
         on_step: Optional[Callable[[], None]] = None, **options: Any) -> PlayResult:
    """Run ``steps`` agent steps of ``game``, resetting at each episode's end.

    Parameters
    ----------
    game : str
        Any name :class:`fastatari.AtariEnv` takes.
    steps : int
        Agent steps to run.
    policy : str, default "random"
        A key of :data:`POLICIES`.
    seed : int, optional
        Seeds the first reset and the policy.
    record : str, optional
        A ``.mp4`` or ``.gif`` path: one :func:`fastatari.tools.video.side_by_side` frame per step,
        showing the screen and observation after that step, written as it plays (a long
        GIF needs no more memory than a short one). Missing folders are created; an
        existing file is overwritten.
    fps : float, optional
        Video speed; default real time, ``60 / frame_skip``.
    all_frames : bool, default False
        Show the whole observation stack in the video, not only its newest frame.
    follow_symlinks : bool, default False
        A ``record`` path that is a symbolic link is refused unless True.
    on_episode : callable, optional
        Called as ``on_episode(index, return, length)`` when an episode ends.
    on_step : callable, optional
        Called after every step (a progress bar's update).
    **options
        :class:`fastatari.AtariOptions` fields.

    Returns
    -------
    PlayResult

    Raises
    ------
    ValueError, OSError
        For a ``record`` path that cannot be written: before the first step (see
        :func:`fastatari.tools.video.check_video_path`), or at the first frame for what only
        opening the file tells.
    ImportError
        When ``record``'s format needs a library that is missing.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    video = None
    if record is not None:
        from fastatari.tools.video import VideoWriter, side_by_side

    env = AtariEnv(game, render_mode="rgb_array" if record else None, **options)
    result = PlayResult()
    try:
        if record is not None:
            # opened here so a missing library or a bad path fails before any play
            video = VideoWriter(record,
                                fps if fps is not None else 60.0 / env.options.frame_skip,
                                follow_symlinks)
        act = POLICIES[policy](env, seed)
        obs, _ = env.reset(seed=seed)
        ret, length = 0.0, 0
        start = time.perf_counter()
        for _ in range(steps):
            obs, reward, terminated, truncated, info = env.step(act(obs))
            ret += info.get("raw_reward", reward)  # the game's score, even with clip_rewards
            length += 1
            if video is not None:
                screen = env.render()
                assert screen is not None  # render_mode="rgb_array" when recording
                video.write(side_by_side(screen, obs, env.options, all_frames=all_frames))
            if terminated or truncated:
                result.episodes.append((ret, length))
                if on_episode is not None:
                    on_episode(len(result.episodes) - 1, ret, length)
                obs, _ = env.reset()
                ret, length = 0.0, 0
            if on_step is not None:
                on_step()
        result.seconds = time.perf_counter() - start
        result.steps = steps
        result.unfinished = (ret, length)
    finally:
        if video is not None:
            video.close()
            result.frames_written = video.frames_written
        env.close()
    return result
