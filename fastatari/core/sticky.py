"""ALE's sticky actions across clone and restore.

ALE repeats the previous frame's action with ``repeat_action_probability``: each frame it
draws a number from its generator and keeps the previous action (and paddle strength) unless
the number reaches the probability. ``cloneState(include_rng=True)`` saves the generator but
not that previous action (ale-py 0.12.1, and ALE's main branch as of August 2026:
``StellaEnvironment::m_player_a_action`` is outside ``ALEState``). A restored emulator then
repeats whatever action it last played itself, and the run is no longer the cloned one.

The previous action matters only for the frames right after the restore whose draws keep it
(the leading "repeat" draws); from the first draw that takes the agent's action on, it is
forgotten. Reading the saved generator (a ``std::mt19937``, serialized as text inside the
state) tells how many such frames there are, usually none. When there are some, ``snapshot``
finds which action the live emulator holds by playing those frames from the state with each
candidate (the recent actions first) and comparing with the live emulator's own play;
``restore`` makes the emulator hold it again by playing it up to the first frame that takes
it, then restoring the state.
"""

from __future__ import annotations

import re
import threading
from typing import Iterable, Optional, Sequence, Tuple

import ale_py
import numpy as np

__all__ = ["ActionHeld", "find_held_action", "hold_action", "leading_repeats"]

ActionHeld = Tuple[int, float]  # (ALE action value, paddle strength)

_ALE_ACTIONS = tuple(ale_py.Action.__members__.values())
# std::mt19937's text form: its 624 state words, then its position
_GENERATOR_TEXT = re.compile(rb"(?:\d+ ){624}\d+")
_DRAWS_PER_FRAME = 2  # player A's, then player B's
_TAIL = 7_200  # bytes from the end of a state where the environment's generator starts
_local = threading.local()  # one numpy generator per thread, its state replaced at each use


def _generator(serialized: bytes) -> np.random.MT19937:
    """The emulator's generator as numpy's MT19937 (the same algorithm and state)."""
    # The last one in the state: ALE saves the console's own generator first, the environment's
    # (which draws the sticky actions) last, near the end (its text is at most 6,875 bytes).
    found = _GENERATOR_TEXT.search(serialized, max(0, len(serialized) - _TAIL))
    if found is None:
        found = ([None] + list(_GENERATOR_TEXT.finditer(serialized)))[-1]
    if found is None:
        raise ValueError("no random generator in this emulator state (cloned without it?)")
    words = np.array(found.group(0).split(), dtype=np.uint64)
    generator = getattr(_local, "generator", None)
    if generator is None:
        generator = _local.generator = np.random.MT19937(0)
    generator.state = {"bit_generator": "MT19937",
                       "state": {"key": words[:624].astype(np.uint32), "pos": int(words[624])}}
    return generator


def leading_repeats(serialized: bytes, probability: float, limit: int = 64) -> int:
    """How many frames after this state keep the previous action (at most ``limit``)."""
    if probability <= 0.0:
        return 0
    draws = _generator(serialized).random_raw(limit * _DRAWS_PER_FRAME)
    takes = draws[::_DRAWS_PER_FRAME] / 4294967296.0 >= probability  # ALE's nextDouble
    return int(np.argmax(takes)) if takes.any() else limit


def hold_action(ale, state, held: ActionHeld, repeats: int) -> None:
    """Leave ``ale`` at ``state`` holding ``held`` as its previous action: play it up to the
    first frame that takes it (``repeats + 1`` frames from ``state``), then restore."""
    action, strength = held
    ale.restoreState(state)
    for _ in range(repeats + 1):
        ale.act(_ALE_ACTIONS[action], strength)
    ale.restoreState(state)


def find_held_action(ale, state, repeats: int,
                     candidates: Iterable[ActionHeld]) -> Optional[ActionHeld]:
    """The action ``ale`` holds (as it is now, at ``state``), among ``candidates``: one that
    plays the ``repeats`` frames after ``state`` exactly as the live emulator does. ``ale`` is
    left at ``state``, holding it. None when ``repeats`` is 0 (it does not matter then)."""
    if repeats == 0:
        return None
    for _ in range(repeats):  # the live emulator's own play of those frames
        ale.act(_ALE_ACTIONS[0])  # ignored: each of these frames repeats the held action
    live = ale.cloneState(include_rng=True).serialize()
    for held in candidates:
        hold_action(ale, state, held, repeats)
        for _ in range(repeats):
            ale.act(_ALE_ACTIONS[0])
        if ale.cloneState(include_rng=True).serialize() == live:
            hold_action(ale, state, held, repeats)
            return held
    raise RuntimeError("could not tell which action the emulator repeats (sticky actions)")


def recent_actions(history: Sequence[ActionHeld]) -> Iterable[ActionHeld]:
    """Candidates for the held action: the recent requests, newest first, then NOOP (what a
    reset leaves), then every action at full strength."""
    seen = set()
    for held in [*reversed(history), (0, 1.0), *((a, 1.0) for a in range(len(_ALE_ACTIONS)))]:
        if held not in seen:
            seen.add(held)
            yield held
