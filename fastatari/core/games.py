"""Game names: every spelling users write, resolved to an ale-py ROM id.

``"breakout"``, ``"Breakout"``, ``"ALE/Breakout-v5"``, ``"fastatari/Breakout-v5"``,
``"BreakoutNoFrameskip-v4"``, ``"space_invaders"`` and ``"SpaceInvaders"`` all work.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Tuple

__all__ = ["UNLOADABLE", "camel_name", "game_ids", "resolve_game", "rom_path"]

#: ROMs that ale-py 0.12.1 ships but cannot run as a single-player game (loading them ends the
#: process); gymnasium's ``ALE/*-v5`` registration skips them too.
UNLOADABLE = frozenset({"combat", "joust", "maze_craze", "warlords"})

_SUFFIX = re.compile(r"-v\d+$")
_VARIANT = re.compile(r"(NoFrameskip|Deterministic)$")


def camel_name(rom: str) -> str:
    """The CamelCase name of a ROM id, as gymnasium ids use it.

    ``space_invaders`` -> ``SpaceInvaders``.
    """
    return rom.title().replace("_", "")


def _key(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")


@lru_cache(maxsize=1)
def _all_roms() -> Tuple[str, ...]:
    from ale_py import roms

    return tuple(roms.get_all_rom_ids())


@lru_cache(maxsize=1)
def _index() -> Dict[str, str]:
    return {_key(rom): rom for rom in _all_roms()}


def game_ids() -> List[str]:
    """Every loadable ROM id ale-py ships, sorted."""
    return sorted(rom for rom in _all_roms() if rom not in UNLOADABLE)


@lru_cache(maxsize=256)
def resolve_game(name: str) -> str:
    """Resolve a game name to its ale-py ROM id.

    Parameters
    ----------
    name : str
        A ROM id (``"space_invaders"``), a CamelCase name (``"SpaceInvaders"``) or an env id
        (``"ALE/SpaceInvaders-v5"``, ``"fastatari/SpaceInvaders-v5"``,
        ``"SpaceInvadersNoFrameskip-v4"``); case-insensitive.

    Returns
    -------
    str
        The ROM id, e.g. ``"space_invaders"``.

    Raises
    ------
    ValueError
        For an unknown name (with the closest known names) or a ROM that does not load.
    """
    if not isinstance(name, str):
        raise ValueError(f"game must be a str such as 'breakout', got {name!r}")
    base = name.strip().rsplit("/", 1)[-1]
    base = _SUFFIX.sub("", base)
    index = _index()
    rom = index.get(_key(base))
    if rom is None:
        rom = index.get(_key(_VARIANT.sub("", base)))
    if rom is None:
        known = game_ids()
        candidates = {rom: rom for rom in known}
        candidates.update({camel_name(rom): rom for rom in known})
        close = difflib.get_close_matches(base, list(candidates), n=3, cutoff=0.6)
        close = [candidates[c] for c in close]
        close += [index[c] for c in difflib.get_close_matches(
            _key(base), [_key(c) for c in known], n=3, cutoff=0.5)]
        close = list(dict.fromkeys(close))[:3]
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close \
            else "; see fastatari.core.games.game_ids() for the list"
        raise ValueError(f"unknown Atari game {name!r}{hint}")
    if rom in UNLOADABLE:
        raise ValueError(f"game {rom!r} does not load in ale-py (it has no single-player mode; "
                         f"the process would exit): {', '.join(sorted(UNLOADABLE))} are excluded")
    return rom


def rom_path(rom: str) -> Path:
    """The ``.bin`` file of ROM id ``rom`` (see :func:`resolve_game`), as ale-py finds it
    (``ALE_ROMS_DIR`` or its own ROMs); ``ValueError`` for a ROM it does not know."""
    from ale_py import roms
    path = roms.get_rom_path(rom)
    if path is None:  # ale-py warned "Rom ... not supported."
        raise ValueError(f"ale-py has no ROM {rom!r}; see fastatari.core.games.game_ids()")
    return path
