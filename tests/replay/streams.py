"""Streams of observation stacks as the libraries that feed a replay memory make them."""

from __future__ import annotations

from typing import Iterator, List, Tuple

import numpy as np

Step = Tuple[np.ndarray, np.ndarray, bool, bool]


def frame_stacks(rng: np.random.Generator, steps: int, k: int = 4,
                 frame: Tuple[int, ...] = (6, 5), padding: str = "zero", episode: int = 9,
                 life_every: int = 0, garbage: float = 0.0, still: float = 0.0
                 ) -> Iterator[Step]:
    """``(obs, next_obs, terminated, truncated)`` of one env, channels first ``(k, *frame)``:
    episodes of about ``episode`` steps; a new episode's stack is zero padding
    (``"zero"``, gymnasium's and fastatari's default) or its first frame repeated
    (``"reset"``); ``life_every``: a lost life that keeps the stack (EnvPool's episodic life);
    ``garbage``: the odds that a step's next stack is unrelated to the last (anything);
    ``still``: the odds that a step's new frame repeats the one before (a screen standing
    still)."""
    def first() -> List[np.ndarray]:
        f = rng.integers(0, 4, frame, dtype=np.uint8)  # few values: repeats happen
        pad = np.zeros(frame, np.uint8) if padding == "zero" else f
        return [pad] * (k - 1) + [f]

    frames = first()
    for _ in range(steps):
        obs = np.stack(frames)
        new = frames[-1] if rng.random() < still else rng.integers(0, 4, frame, dtype=np.uint8)
        frames = frames[1:] + [new]
        if rng.random() < garbage:
            frames = [rng.integers(0, 4, frame, dtype=np.uint8) for _ in range(k)]
        end, cut = rng.random() < 1 / episode, rng.random() < 0.3  # ended: a time limit's?
        lost_life = bool(life_every) and rng.random() < 1 / life_every  # the stack goes on
        yield obs, np.stack(frames), (end and not cut) or lost_life, end and cut
        if end:
            frames = first()
