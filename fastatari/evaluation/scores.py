"""Human-normalized Atari scores, and their aggregates over games and runs as papers report them.

A human-normalized score (HNS) maps a game's raw return linearly so that 0 is a random agent's
return and 1 a human tester's: ``(score - random) / (human - random)``. The reference returns
come from published tables, which differ (how long the human played, how the random agent
acted), so every function takes ``table=``:

``"dqn_zoo"`` (the default)
    DeepMind's DQN Zoo, 57 games. Human: a professional game tester; episodes capped at 108,000
    frames (30 minutes), each starting with 1 to 30 no-ops.
``"nature"``
    Mnih et al., "Human-level control through deep reinforcement learning", Nature 518 (2015),
    Extended Data Table 2, as printed: 49 games. Human: about 20 episodes of at most 5 minutes
    (18,000 frames); random: an action every sixth frame (10 Hz).
``"dopamine"``
    Dopamine's Atari 100k normalization, 55 games: the DQN Zoo numbers, but Video Pinball's
    random score is 0.0 (not 16256.9) and Defender and Surround have no human score. rliable's
    Atari notebook uses the same table ("taken from the MuZero paper", it says).

Each table is a data file beside this module, ``tables/<name>.json``, that carries its source,
citation and notes with the scores.

Where the tables share a game, their random scores are the same numbers (Nature prints those of
1000 and over rounded: Centipede 2091 for 2090.9) except Video Pinball's 0.0 in ``"dopamine"``;
``"dqn_zoo"`` and ``"dopamine"`` have the same human scores, and Nature's 5-minute human scores
differ from them in 33 of its 49 games (Ms. Pac-Man: 15693 against 6951.6).

Games are ale-py ROM ids (``"montezuma_revenge"``); any spelling
:func:`fastatari.core.games.resolve_game` accepts works (``"MontezumaRevenge"``,
``"ALE/MontezumaRevenge-v5"``).

:func:`aggregate` computes the median, mean, interquartile mean (IQM) and optimality gap with
stratified-bootstrap confidence intervals (Agarwal et al., "Deep Reinforcement Learning at the
Edge of the Statistical Precipice", NeurIPS 2021) through the ``rliable`` library, an optional
dependency: ``pip install "fastatari[eval]"``.
"""

from __future__ import annotations

import json
import math
import numbers
from importlib import resources
from types import MappingProxyType
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from fastatari.core.games import resolve_game

__all__ = ["DEFAULT_TABLE", "TABLES", "SOURCES", "METRICS", "Estimate", "tables", "reference",
           "human_normalized", "has_reference", "interquartile_mean", "aggregate"]

#: The table used when none is named.
DEFAULT_TABLE = "dqn_zoo"

#: The reference tables, the default first: each is the data file ``tables/<name>.json`` beside
#: this module (its source, citation and notes are fields there, beside the scores).
_TABLE_NAMES: Tuple[str, ...] = ("dqn_zoo", "nature", "dopamine")


def _load_table(name: str) -> Dict[str, Any]:
    """The data file of table ``name``, checked: every game's ``[random, human]`` as floats."""
    path = resources.files(__package__).joinpath("tables").joinpath(f"{name}.json")
    with path.open("r", encoding="utf-8") as file:
        data = json.load(file)
    if data.get("name") != name or data.get("columns") != ["random", "human"]:
        raise RuntimeError(f"score table file {path} is not table {name!r} of (random, human) "
                           f"pairs")
    pairs: Dict[str, Tuple[float, float]] = {}
    for game, pair in data["scores"].items():
        random_score, human_score = (float(value) for value in pair)
        if not (math.isfinite(random_score) and math.isfinite(human_score)) \
                or random_score == human_score:
            raise RuntimeError(f"score table {name!r}: bad (random, human) for {game!r}: {pair}")
        pairs[game] = (random_score, human_score)
    data["scores"] = MappingProxyType(pairs)
    return data


# read once, at import: three small files
_TABLE_DATA = {name: _load_table(name) for name in _TABLE_NAMES}

#: Reference scores: ``TABLES[table][game] == (random, human)``. Read-only.
TABLES: Mapping[str, Mapping[str, Tuple[float, float]]] = MappingProxyType(
    {name: data["scores"] for name, data in _TABLE_DATA.items()})

#: Where each table's numbers come from, in one line (the data file's ``source``; its
#: ``citation`` and ``notes`` say more).
SOURCES: Mapping[str, str] = MappingProxyType(
    {name: data["source"] for name, data in _TABLE_DATA.items()})

#: The aggregates :func:`aggregate` computes: rliable's ``aggregate_median``, ``aggregate_mean``,
#: ``aggregate_iqm`` and ``aggregate_optimality_gap``.
METRICS: Tuple[str, ...] = ("median", "mean", "iqm", "optimality_gap")

#: Bootstrap confidence-interval methods rliable documents (``arch``'s names).
_CI_METHODS = ("percentile", "basic", "bc", "bca")


class Estimate(NamedTuple):
    """An aggregate's point estimate and its confidence interval."""

    value: float
    low: float
    high: float


def tables() -> Tuple[str, ...]:
    """The reference table names, the default first."""
    return tuple(TABLES)


def _table(table: Any) -> Mapping[str, Tuple[float, float]]:
    if not isinstance(table, str) or table not in TABLES:
        raise ValueError(f"unknown score table {table!r}; tables: {', '.join(TABLES)}")
    return TABLES[table]


def reference(game: str, table: str = DEFAULT_TABLE) -> Tuple[float, float]:
    """A game's reference scores.

    Parameters
    ----------
    game : str
        A ROM id (``"ms_pacman"``) or any spelling :func:`~fastatari.core.games.resolve_game`
        accepts (``"MsPacman"``, ``"ALE/MsPacman-v5"``).
    table : str, default "dqn_zoo"
        One of :func:`tables`.

    Returns
    -------
    (float, float)
        ``(random, human)``.

    Raises
    ------
    ValueError
        For an unknown table or game, or a game the table has no score for (the message names
        the tables that have one).
    """
    scores = _table(table)
    rom = resolve_game(game)
    pair = scores.get(rom)
    if pair is None:
        having = [name for name, other in TABLES.items() if rom in other]
        where = (f"; tables with it: {', '.join(having)}" if having
                 else "; no table has it")
        raise ValueError(f"no reference score for game {rom!r} in table {table!r} "
                         f"({len(scores)} games){where}")
    return pair


def human_normalized(game: str, score: Any, table: str = DEFAULT_TABLE) -> Union[float, np.ndarray]:
    """A raw score as a human-normalized score: ``(score - random) / (human - random)``.

    Parameters
    ----------
    game : str
        The game (see :func:`reference`).
    score : float or array_like
        Raw returns (undiscounted, unclipped episode scores).
    table : str, default "dqn_zoo"
        The reference table (see the module docstring; :func:`tables` lists them).

    Returns
    -------
    float or numpy.ndarray
        A float for a scalar ``score``, else a float64 array of ``score``'s shape: 0.0 at the
        table's random score, 1.0 at its human score.

    Raises
    ------
    ValueError
        As :func:`reference`.
    TypeError
        For a ``score`` that is not a number or an array of numbers.
    """
    random_score, human_score = reference(game, table)
    values = _as_float_array("score", score)
    normalized = (values - random_score) / (human_score - random_score)
    return float(normalized) if normalized.ndim == 0 else normalized


def interquartile_mean(values: Any) -> float:
    """The mean of the middle 50% of ``values`` (rliable's ``aggregate_iqm`` of one run,
    ``scipy.stats.trim_mean(values, 0.25)``): for point estimates in training logs, where
    importing rliable would cost a second. ValueError for no values (the mean of nothing is
    no score)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    if not ordered.size:
        raise ValueError("interquartile_mean needs at least one value, got none")
    cut = int(0.25 * ordered.size)
    return float(ordered[cut:ordered.size - cut].mean())


def has_reference(game: str, table: str = DEFAULT_TABLE) -> bool:
    """Whether ``table`` has ``game``'s random and human scores."""
    return resolve_game(game) in _table(table)


def _as_float_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array; ``TypeError`` for booleans, strings and other non-numbers."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        array = np.asarray(value)
    except ValueError:  # a ragged nesting of sequences
        raise ValueError(f"{name} must be a number or a rectangular array of numbers, got "
                         f"{value!r}") from None
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer)
                                   or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must be a number or an array of numbers, got an array of "
                        f"dtype {array.dtype}")
    return array.astype(np.float64, copy=False)


def _rliable() -> Tuple[Any, Any]:
    """rliable's ``library`` and ``metrics`` modules, imported on first use."""
    try:
        from rliable import library, metrics
    except ImportError as error:
        raise ImportError('fastatari.scores.aggregate needs rliable: pip install '
                          '"fastatari[eval]"') from error
    except TypeError as error:
        # arch 7.x (rliable 1.2.0 caps arch below 8) fails at import under pandas 3:
        # "deprecate_kwarg() missing 1 required positional argument: 'new_arg_name'"
        import pandas

        if int(pandas.__version__.split(".")[0]) < 3:
            raise
        raise ImportError(f"rliable could not be imported: its dependency arch fails under "
                          f"pandas {pandas.__version__}; pip install \"fastatari[eval]\" "
                          f"(pins pandas < 3)") from error
    return library, metrics


def _score_matrix(scores: Any, table: Optional[str]) -> np.ndarray:
    """``scores`` as a ``(runs x games)`` float64 matrix of human-normalized scores."""
    if isinstance(scores, Mapping):
        if not scores:
            raise ValueError("scores is an empty mapping; give game -> per-run raw scores")
        name = DEFAULT_TABLE if table is None else table
        games, columns = [], []
        for game, runs in scores.items():
            column = np.atleast_1d(human_normalized(game, runs, name))
            if column.ndim != 1 or column.size == 0:
                raise ValueError(f"scores[{game!r}] must be a non-empty 1-D sequence of "
                                 f"per-run scores, got shape {column.shape}")
            games.append(resolve_game(game))
            columns.append(column)
        lengths = {game: column.size for game, column in zip(games, columns, strict=True)}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"every game needs the same number of runs (a stratified "
                             f"bootstrap resamples runs within each game); got {lengths}")
        if len(set(games)) != len(games):
            raise ValueError(f"scores names a game twice: {games}")
        return np.stack(columns, axis=1)
    if table is not None:
        raise ValueError("an array of scores is taken as already human-normalized, so table= "
                         "does not apply; pass a mapping game -> raw scores to normalize them "
                         "with a table")
    matrix = _as_float_array("scores", scores)
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise ValueError(f"scores must be a (runs x games) array with at least one run and "
                         f"one game, got shape {matrix.shape}")
    return matrix


def aggregate(scores: Union[np.ndarray, Mapping[str, Any]], *,
              table: Optional[str] = None,
              metrics: Sequence[str] = METRICS,
              reps: int = 50_000,
              confidence: float = 0.95,
              method: str = "percentile",
              task_bootstrap: bool = False,
              gap_threshold: float = 1.0,
              seed: Optional[int] = 0) -> Dict[str, Estimate]:
    """Aggregate human-normalized scores over games and runs, with bootstrap confidence intervals.

    The point estimates are rliable's ``aggregate_median``, ``aggregate_mean``,
    ``aggregate_iqm`` and ``aggregate_optimality_gap`` of the ``(runs x games)`` score matrix;
    the intervals come from one ``rliable.library.get_interval_estimates`` call (a stratified
    bootstrap: runs resampled within each game), as in Agarwal et al. 2021.

    Parameters
    ----------
    scores : array_like of shape (runs, games), or mapping of str to array_like
        Either human-normalized scores, one row per run (seed) and one column per game, or a
        mapping ``game -> per-run raw scores`` (each game the same number of runs), normalized
        here with ``table``.
    table : str, optional
        The reference table for a mapping (default ``"dqn_zoo"``). Not allowed with an array,
        which is taken as already normalized.
    metrics : sequence of str, default all of :data:`METRICS`
        Which aggregates, in the order returned.
    reps : int, default 50000
        Bootstrap resamples (rliable's default).
    confidence : float, default 0.95
        Confidence-interval coverage, in (0, 1).
    method : {"percentile", "basic", "bc", "bca"}, default "percentile"
        Bootstrap interval method (rliable's default is "percentile").
    task_bootstrap : bool, default False
        Also resample games (rliable's ``task_bootstrap``): intervals then include the spread
        over a population of games, not only over runs.
    gap_threshold : float, default 1.0
        The optimality gap's ``gamma``: scores above it count as optimal.
    seed : int or None, default 0
        The bootstrap's seed; None draws fresh entropy. rliable resamples with NumPy's global
        generator (``np.random.choice``) whatever ``random_state`` it is given, so that
        generator is seeded for the call and restored afterwards: the same seed gives the same
        intervals, and the caller's global random state is left as it was (not thread-safe
        against other threads drawing from it meanwhile).

    Returns
    -------
    dict of str to Estimate
        ``{metric: Estimate(value, low, high)}``; for ``"optimality_gap"`` lower is better.

    Raises
    ------
    ImportError
        Without rliable (``pip install "fastatari[eval]"``).
    ValueError
        For bad scores, an unknown game, table, metric or method, or an out-of-range parameter.
    TypeError
        For scores that are not numbers.
    """
    matrix = _score_matrix(scores, table)
    if not np.all(np.isfinite(matrix)):
        raise ValueError("scores must be finite (a NaN or inf would make every aggregate and "
                         "interval NaN)")
    if isinstance(metrics, str):
        metrics = (metrics,)
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in METRICS]
    if not metrics or unknown:
        raise ValueError(f"metrics must name at least one of {', '.join(METRICS)}; "
                         f"got {list(metrics)}")
    if len(set(metrics)) != len(metrics):
        raise ValueError(f"metrics names one twice: {list(metrics)}")
    if not isinstance(reps, numbers.Integral) or isinstance(reps, bool) or reps < 1:
        raise ValueError(f"reps must be an int >= 1, got {reps!r}")
    if (not isinstance(confidence, numbers.Real) or isinstance(confidence, bool)
            or not 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")
    if method not in _CI_METHODS:
        raise ValueError(f"method must be one of {', '.join(_CI_METHODS)}, got {method!r}")
    if not isinstance(task_bootstrap, (bool, np.bool_)):
        raise ValueError(f"task_bootstrap must be a bool, got {task_bootstrap!r}")
    if (not isinstance(gap_threshold, numbers.Real) or isinstance(gap_threshold, bool)
            or not math.isfinite(gap_threshold)):
        raise ValueError(f"gap_threshold must be a finite number, got {gap_threshold!r}")
    if seed is not None and (not isinstance(seed, numbers.Integral) or isinstance(seed, bool)
                             or not 0 <= seed < 2**32):
        raise ValueError(f"seed must be None or an int in [0, 2**32), got {seed!r}")

    library, rl_metrics = _rliable()
    functions = {
        "median": rl_metrics.aggregate_median,
        "mean": rl_metrics.aggregate_mean,
        "iqm": rl_metrics.aggregate_iqm,
        "optimality_gap": lambda x: rl_metrics.aggregate_optimality_gap(x, gap_threshold),
    }
    chosen = [functions[m] for m in metrics]

    def statistics(x: np.ndarray) -> np.ndarray:
        return np.array([function(x) for function in chosen])

    saved = np.random.get_state()
    # rliable's StratifiedBootstrap.update_indices resamples with np.random.choice, NumPy's
    # global generator, whatever random_state it is given (and arch deprecates random_state)
    np.random.set_state(np.random.RandomState(seed).get_state())
    try:
        points, intervals = library.get_interval_estimates(
            {"scores": matrix}, statistics, method=method, task_bootstrap=bool(task_bootstrap),
            reps=int(reps), confidence_interval_size=float(confidence))
    finally:
        np.random.set_state(saved)
    point, interval = points["scores"], intervals["scores"]
    return {metric: Estimate(float(point[i]), float(interval[0, i]), float(interval[1, i]))
            for i, metric in enumerate(metrics)}
