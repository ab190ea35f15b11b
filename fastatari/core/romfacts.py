"""What each ROM offers (action sets, modes, difficulties, screen size), and the options check.

Loading a ROM costs 0.1-0.3 s (ALE's ``loadROM``). A vector env must check its options against
every game and know the action names before any env is reset, and a seeded reset loads each
env's ROM anyway; so the facts of every ROM ale-py ships are read once into ``rom_facts.json``
(``python -m fastatari.core.romfacts`` writes it) and a vector env of 57 games loads 57 ROMs, not
57 more to check them. The table is used only with the ale-py version that wrote it; with
another, the facts are read from a loaded ROM, as every :class:`~fastatari.core.game.AtariGame`
does for itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

import ale_py

from fastatari.core.games import game_ids, resolve_game, rom_path
from fastatari.core.options import AtariOptions

__all__ = ["EnlargedScreen", "RomFacts", "UnavailableSetting", "known_facts", "loaded_facts",
           "read_facts", "write_table"]

TABLE_FILE = os.path.join(os.path.dirname(__file__), "rom_facts.json")


class EnlargedScreen(ValueError):
    """An observation larger than the ROM's screen (fastatari only downscales); a front end
    may name the sizes as its users write them."""

    def __init__(self, rom: str, size: Tuple[int, int], screen: Tuple[int, int]) -> None:
        self.rom, self.size, self.screen = rom, size, screen  # (width, height) both
        super().__init__(self.describe(f"screen_size {size} (width, height)"))

    def describe(self, given: str) -> str:
        """The message, with the requested size as ``given`` words."""
        w, h = self.screen
        return (f"{given} would enlarge {self.rom}'s {w}x{h} screen; fastatari only "
                f"downscales (INTER_AREA)")


class UnavailableSetting(ValueError):
    """A ``mode`` or ``difficulty`` the ROM does not have; a front end may say it in its own
    words (as ``fastatari.envpool`` does, with EnvPool's exception type)."""

    def __init__(self, rom: str, name: str, value: int, available: Tuple[int, ...]) -> None:
        self.rom, self.name, self.value, self.available = rom, name, value, available
        super().__init__(f"{name} must be one of {list(available)} for {rom}, got {value}")


@dataclass(frozen=True)
class RomFacts:
    """One ROM's facts as ALE reports them once it is loaded."""

    rom: str
    minimal_actions: Tuple[str, ...]  # getMinimalActionSet(), by name
    legal_actions: Tuple[str, ...]  # getLegalActionSet(): the full action space
    modes: Tuple[int, ...]
    difficulties: Tuple[int, ...]
    screen: Tuple[int, int]  # (height, width)

    def actions(self, full_action_space: bool) -> Tuple[str, ...]:
        return self.legal_actions if full_action_space else self.minimal_actions

    def check(self, options: AtariOptions) -> None:
        """Raise ``ValueError`` for options this ROM cannot play."""
        actions = self.actions(options.full_action_set)
        if options.noop_max > 0 and actions[0] != "NOOP":
            raise ValueError(f"noop_max > 0 needs action 0 to be NOOP, but {self.rom}'s action 0 "
                             f"is {actions[0]}")
        if options.fire_reset and (len(actions) < 2 or actions[1] != "FIRE"):
            raise ValueError(f"fire_reset=True needs a game whose action 1 is FIRE; {self.rom} "
                             f"has actions {list(actions)}")
        h, w = self.screen
        if options.width > w or options.height > h:
            raise EnlargedScreen(self.rom, (options.width, options.height), (w, h))
        if options.mode is not None and options.mode not in self.modes:
            raise UnavailableSetting(self.rom, "mode", options.mode, self.modes)
        if options.difficulty is not None and options.difficulty not in self.difficulties:
            raise UnavailableSetting(self.rom, "difficulty", options.difficulty,
                                     self.difficulties)


def read_facts(rom: str, ale: Any) -> RomFacts:
    """The facts of ``rom`` from an ``ale_py.ALEInterface`` that has it loaded."""
    height, width = ale.getScreenDims()
    return RomFacts(rom, tuple(a.name for a in ale.getMinimalActionSet()),
                    tuple(a.name for a in ale.getLegalActionSet()),
                    tuple(int(m) for m in ale.getAvailableModes()),
                    tuple(int(d) for d in ale.getAvailableDifficulties()),
                    (int(height), int(width)))


def known_facts(game: str) -> Optional[RomFacts]:
    """The facts of ``game`` from the table, without loading it; None if the table was written
    by another ale-py version, or lacks the ROM (then load it: :func:`loaded_facts`)."""
    return _table().get(resolve_game(game))


@lru_cache(maxsize=None)
def loaded_facts(game: str) -> RomFacts:
    """The facts of ``game``: from the table, else by loading the ROM once in this process."""
    facts = known_facts(game)
    return facts if facts is not None else _load_facts(resolve_game(game))


def _load_facts(rom: str) -> RomFacts:
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.loadROM(rom_path(rom))
    return read_facts(rom, ale)


@lru_cache(maxsize=1)
def _table() -> Dict[str, RomFacts]:
    try:
        with open(TABLE_FILE) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if data.get("ale_py") != ale_py.__version__:
        return {}
    return {rom: RomFacts(rom, tuple(row["minimal_actions"]), tuple(row["legal_actions"]),
                          tuple(row["modes"]), tuple(row["difficulties"]), tuple(row["screen"]))
            for rom, row in data["roms"].items()}


def write_table(path: str = TABLE_FILE) -> int:
    """Load every ROM fastatari plays and write their facts to ``path``; returns the ROM count."""
    rows = {}
    for rom in game_ids():  # every ROM ale-py ships that ALE can load
        row = asdict(_load_facts(rom))
        del row["rom"]
        rows[rom] = row
    lines = [f" {json.dumps(rom)}: {json.dumps(row, sort_keys=True)}" for rom, row in rows.items()]
    with open(path, "w") as f:  # one line per ROM
        f.write(f'{{"ale_py": {json.dumps(ale_py.__version__)}, "roms": {{\n'
                + ",\n".join(lines) + "\n}}\n")
    return len(rows)


if __name__ == "__main__":
    print(f"{write_table()} ROMs written to {TABLE_FILE} (ale-py {ale_py.__version__})")
