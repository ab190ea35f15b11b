"""Which game each env plays, with which options, and on which worker.

A vector env plays one game (``"breakout"``) or one per env (``["pong", "breakout", ...]``,
the multi-task setting of Atari-57 agents). Games differ in emulation cost by several times,
and a synchronous step waits for the slowest worker, so envs of several games are assigned to
workers by cost (longest first, each to the least loaded worker, each game's envs kept
together) rather than in contiguous blocks. Costs come from ``game_costs.json``: agent-step
times measured once per ROM by ``python -m fastatari.vector.game_costs`` (relative costs are
what matters here).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from fastatari.core.games import resolve_game
from fastatari.core.options import AtariOptions

__all__ = ["Assignment", "assign_workers", "contiguous_blocks", "game_costs", "make_assignment",
           "resolve_games"]

#: Options that may differ between games, given as a mapping ``{game: value}``.
PER_GAME_OPTIONS = ("mode", "difficulty")
COSTS_FILE = os.path.join(os.path.dirname(__file__), "game_costs.json")


@dataclass(frozen=True)
class Assignment:
    """The games of a vector env: ``games[i]`` is env ``i``'s ROM id."""

    games: Tuple[str, ...]
    names: Tuple[str, ...]  # the distinct games, in order of first appearance
    options: Mapping[str, AtariOptions]  # each distinct game's options

    @property
    def multi(self) -> bool:
        return len(self.names) > 1

    def game_index(self) -> np.ndarray:
        """Each env's game as an index into :attr:`names`."""
        where = {name: k for k, name in enumerate(self.names)}
        return np.array([where[g] for g in self.games], np.int64)

    def env_games(self) -> Tuple[Tuple[str, AtariOptions], ...]:
        """``(ROM, options)`` of every env, as workers take them."""
        return tuple((g, self.options[g]) for g in self.games)


def resolve_games(games: Any, distinct: bool = False, name: str = "games") -> Tuple[str, ...]:
    """The ROM ids of ``games``, a sequence (list, tuple, array) of names: ``TypeError`` for
    anything else (a set's order changes with ``PYTHONHASHSEED``, and which env plays which
    game, or which seeds a game gets, with it), ``ValueError`` for an unknown name, and with
    ``distinct`` for an empty sequence or a game named twice (``"pong"`` and ``"Pong"``
    included)."""
    if isinstance(games, str) or not isinstance(games, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a name or a sequence (list, tuple) of names, got a "
                        f"{type(games).__name__}: {games!r}")
    roms = tuple(resolve_game(g) for g in games)
    if distinct:
        if not roms:
            raise ValueError("no game given")
        seen: Dict[str, Any] = {}
        for given, rom in zip(games, roms, strict=True):
            if rom in seen:
                raise ValueError(f"the game {rom!r} is named twice ({seen[rom]!r} and "
                                 f"{given!r})")
            seen[rom] = given
    return roms


def make_assignment(game: str | Sequence[str], num_envs: int,
                options: Dict[str, Any]) -> Tuple[Assignment, AtariOptions]:
    """Resolve ``game`` (one name, or one per env) and the options of each distinct game.

    ``mode`` and ``difficulty`` may be mappings ``{game name: value}`` (games not named keep
    the ROM's default). Returns the assignment and the options common to every game.
    """
    if isinstance(game, str):
        games = (resolve_game(game),) * num_envs
    else:
        games = resolve_games(game, name="game")
        if len(games) != num_envs:
            raise ValueError(f"game must name one game per env: {len(games)} names for "
                             f"num_envs={num_envs}")
    names = tuple(dict.fromkeys(games))
    per_game = {key: options.pop(key) for key in PER_GAME_OPTIONS
                if isinstance(options.get(key), Mapping)}
    common = AtariOptions.build(**options)
    chosen: Dict[str, Dict[str, Any]] = {name: {} for name in names}
    for key, mapping in per_game.items():
        given: Dict[str, Any] = {}  # ROM -> the name it was given as
        for name, value in mapping.items():
            try:
                rom = resolve_game(name)
            except ValueError as error:
                raise ValueError(f"{key}={{game: value}}: {error}") from None
            if rom not in chosen:
                raise ValueError(f"{key} names {name!r}, which no env plays "
                                 f"(games: {', '.join(names)})")
            if rom in given:
                raise ValueError(f"{key} names the game {rom!r} twice ({given[rom]!r} and "
                                 f"{name!r}): which value is meant?")
            given[rom] = name
            chosen[rom][key] = value
    by_game = {name: common.replace(**chosen[name]) if chosen[name] else common
               for name in names}
    return Assignment(games, names, by_game), common


def contiguous_blocks(n: int, parts: int) -> List[range]:
    """``range(n)`` in ``parts`` contiguous blocks, as even as possible, ascending."""
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [range(int(bounds[k]), int(bounds[k + 1])) for k in range(parts)]


def assign_workers(assignment: Assignment, num_workers: int, balance: bool = True,
                   costs: Mapping[str, float] | None = None) -> List[np.ndarray]:
    """The envs of each worker, in the order it steps them.

    One game, or ``balance=False``: contiguous blocks, as even as possible, ascending. Several
    games: balanced by cost (``costs``, µs per agent step by ROM; default the shipped table)
    while keeping each game's envs together. Switching games costs: a worker that steps a
    different ROM after each env finds little of it in its caches and branch predictors (over
    the Atari-57 suite, a bare ``ale.act`` loop that changes game every agent step was
    1.1-1.2x slower here than one that plays each game for a while). So games are placed
    whole, longest first, each on the least loaded worker; a game is split only where that
    worker would pass its fair share (the total cost ÷ workers), the rest going on to the next
    least loaded. With one env per game this is the classic longest-first greedy. Each worker
    steps its envs grouped by game, in order of env id within a game.
    """
    n = len(assignment.games)
    if not (balance and assignment.multi):
        return [np.arange(block.start, block.stop) for block in contiguous_blocks(n, num_workers)]
    if costs is None:
        costs = game_costs()
    default = float(np.median(list(costs.values()))) if costs else 1.0
    game_of = assignment.game_index()
    cost = np.array([costs.get(name, default) for name in assignment.names])
    share = float(cost[game_of].sum()) / num_workers
    sizes = np.bincount(game_of, minlength=len(assignment.names))
    load = np.zeros(num_workers)
    count = np.zeros(num_workers, np.int64)
    owner = np.empty(n, np.int64)
    for g in np.argsort(-cost * sizes, kind="stable"):  # the costliest games first
        envs = list(np.flatnonzero(game_of == g))
        while envs:
            k = int(np.lexsort((count, load))[0])  # least loaded; fewest envs on a tie
            fit = int((share - load[k]) // cost[g])  # as many as fit in its fair share
            take, envs = envs[:max(1, fit)], envs[max(1, fit):]
            owner[take] = k
            load[k] += cost[g] * len(take)
            count[k] += len(take)
    return [np.array(sorted(np.flatnonzero(owner == k), key=lambda i: (game_of[i], i)),
                     np.int64) for k in range(num_workers)]


@lru_cache(maxsize=1)
def game_costs() -> Dict[str, float]:
    """Microseconds per agent step (frame skip 4, random actions) for each ROM, as measured by
    ``python -m fastatari.vector.game_costs``; empty if the table is missing."""
    try:
        with open(COSTS_FILE) as f:
            return {k: float(v) for k, v in json.load(f)["us_per_step"].items()}
    except (OSError, ValueError, KeyError):
        return {}
