"""gymnasium ids ``fastatari/<Name>-v5`` for every ROM ale-py ships that loads."""

from __future__ import annotations

import gymnasium

from fastatari.core.games import camel_name, game_ids

__all__ = ["register_envs"]

NAMESPACE = "fastatari"


def register_envs() -> None:
    """Register ``fastatari/<Name>-v5`` (e.g. ``fastatari/Breakout-v5``) for every loadable ROM.

    The entry point is :class:`fastatari.AtariEnv` with the game preset; every other keyword of
    ``gymnasium.make`` is an :class:`fastatari.AtariOptions` field or ``render_mode``.
    ``gymnasium.make_vec`` uses ``fastatari.vector.AtariVectorEnv``. Calling it again is a no-op.
    """
    registry = gymnasium.registry
    for rom in game_ids():
        env_id = f"{NAMESPACE}/{camel_name(rom)}-v5"
        if env_id in registry:
            continue
        gymnasium.register(id=env_id, entry_point="fastatari.env:AtariEnv",
                           vector_entry_point="fastatari.vector:make_vec",
                           kwargs={"game": rom})
