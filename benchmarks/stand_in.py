"""A game that does not emulate, for the transport's measurements: what the workers build
instead of the real game through the pool's game factory,
``WorkerPool(plan, game_factory=STAND_IN)`` (see :data:`fastatari.vector.messages.GAME_FACTORY`).

Imported by each worker, so it imports nothing: a step returns at once (reward 0, the episode
goes on) and a reset leaves the observation as it is (the shared memory's zeros), so that the
trainer's wall time per step is the transport's alone, with everything else in the worker the
real thing: its start, its command loop, its waits and its writes of each env's results.
"""
from __future__ import annotations

STAND_IN = "benchmarks.stand_in:StandInGame"


class StandInGame:
    """Built as :class:`fastatari.core.game.AtariGame` is, ``(rom, options, stack=, seed=)``."""

    def __init__(self, rom, options, stack=None, seed=None) -> None:
        self.life_loss_signal = False

    def reset(self, seed=None) -> dict:
        return {}

    def step(self, action) -> tuple:
        return 0.0, False, False, {}

    def close(self) -> None:
        pass
