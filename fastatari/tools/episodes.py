"""Episode statistics for training logs: game returns and lengths, to TensorBoard or CSV.

:class:`EpisodeRecorder` wraps a fastatari vector env and reads ``info["game"]``, which
fastatari fills when a *game* ends: its raw return and length stay correct with
``clip_rewards``, ``episodic_life`` and truncation, which wrappers that sum the step rewards
get wrong. Every ``log_every`` agent steps it writes a few scalars.
"""

from __future__ import annotations

import csv
import os
from collections import deque
from typing import Any, Deque, Dict, Optional, Tuple

import gymnasium
import numpy as np

from fastatari._files import check_not_symlink
from fastatari.core.schema import GAME_KEY
from fastatari.evaluation import scores

__all__ = ["EpisodeRecorder"]

#: Logged values, in CSV column order; TensorBoard tags are ``episodes/<name>``.
FIELDS = ("last_return", "mean_return_100", "min_return", "max_return", "mean_length",
          "episodes")

_INSTALL_HINT = 'pip install "fastatari[tensorboard]"'


def _game_key(name: str) -> str:
    """The stats key of one game's mean return (multi-game envs)."""
    return f"{name}/mean_return_100"


def _summary_writer_class() -> Optional[type]:
    """torch's SummaryWriter if torch (and tensorboard) import, else tensorboardX's, else None."""
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
        return TorchWriter
    except ImportError:
        pass
    try:
        from tensorboardX import SummaryWriter as XWriter
        return XWriter
    except ImportError:
        return None


class _CsvWriter:
    """``episodes.csv`` in ``log_dir``: a header, then one row per report."""

    def __init__(self, log_dir: str, columns: Tuple[str, ...] = FIELDS,
                 follow_symlinks: bool = False) -> None:
        self.path = os.path.join(log_dir, "episodes.csv")
        check_not_symlink(self.path, follow_symlinks)
        self._file = open(self.path, "w", newline="")
        self._csv = csv.writer(self._file)
        self._columns = columns
        self._csv.writerow(("step",) + self._columns)
        self._file.flush()

    def write(self, step: int, stats: Dict[str, float]) -> None:
        self._csv.writerow([step] + [stats.get(name, float("nan")) for name in self._columns])
        self._file.flush()  # readable while training runs

    def close(self) -> None:
        self._file.close()


class _TensorBoardWriter:
    """Scalars ``episodes/<name>`` (and ``games/<game>/mean_return_100``) through a
    SummaryWriter."""

    def __init__(self, log_dir: str, writer_class: type) -> None:
        self._writer = writer_class(log_dir)

    def write(self, step: int, stats: Dict[str, float]) -> None:
        for name, value in stats.items():
            tag = f"games/{name}" if "/" in name else f"episodes/{name}"
            self._writer.add_scalar(tag, value, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class EpisodeRecorder(gymnasium.vector.VectorWrapper):
    """Record finished games' returns and lengths and log them every ``log_every`` steps.

    A pass-through wrapper: :meth:`reset`, :meth:`step`, :meth:`send` and :meth:`recv` return
    exactly what the wrapped env returns. Each report (at most one per call, when the agent
    step count crosses a multiple of ``log_every``, once a game has finished) holds:

    * ``last_return``: the return of the most recently finished game;
    * ``mean_return_100``: the mean return of the last 100 finished games (all envs);
    * ``min_return``, ``max_return``: over envs, of each env's latest finished game;
    * ``mean_length``: the mean length (agent steps) of the last 100 finished games;
    * ``episodes``: finished games so far;
    * with several games in the env (its ``games``), ``<game>/mean_return_100`` per game: the
      mean return of that game's last 100 finished games (TensorBoard tag
      ``games/<game>/mean_return_100``, a CSV column per game);
    * human-normalized scores (``hns_table``, :mod:`fastatari.evaluation.scores`), for games with
      reference scores: ``mean_hns_100`` (one game: of ``mean_return_100``), or per game
      ``<game>/hns_100`` and over the games that finished one, ``suite/median_hns`` and
      ``suite/iqm_hns`` (point estimates).

    Parameters
    ----------
    envs : gymnasium.vector.VectorEnv
        A fastatari vector env (any env that puts ``info["game"]``, in the layout of gymnasium's
        ``info["episode"]``, with its
        ``_episode`` mask; ``recv`` results need ``info["env_id"]``).
    log_dir : str or os.PathLike
        Created if missing.
    backend : {"auto", "tensorboard", "csv"}
        ``"auto"``: TensorBoard when ``torch.utils.tensorboard`` or ``tensorboardX`` imports,
        else ``episodes.csv`` (overwritten) in ``log_dir``.
    log_every : int
        Agent steps (env transitions, summed over envs) between reports.
    follow_symlinks : bool, default False
        An ``episodes.csv`` that is a symbolic link is refused (``OSError``) unless True.
    hns_table : str or None, default "dqn_zoo"
        The reference table of the human-normalized scores; None logs none.

    Raises
    ------
    ImportError
        ``backend="tensorboard"`` with neither library installed.
    """

    def __init__(self, envs: gymnasium.vector.VectorEnv, log_dir: str | os.PathLike,
                 backend: str = "auto", log_every: int = 1000,
                 follow_symlinks: bool = False,
                 hns_table: Optional[str] = scores.DEFAULT_TABLE) -> None:
        super().__init__(envs)
        if backend not in ("auto", "tensorboard", "csv"):
            raise ValueError(f"backend must be 'auto', 'tensorboard' or 'csv', got {backend!r}")
        if isinstance(log_every, bool) or not isinstance(log_every, int) or log_every < 1:
            raise ValueError(f"log_every must be an int >= 1, got {log_every!r}")
        writer_class = None if backend == "csv" else _summary_writer_class()
        if backend == "tensorboard" and writer_class is None:
            raise ImportError(f"backend='tensorboard' needs torch (with tensorboard) or "
                              f"tensorboardX: {_INSTALL_HINT}")
        self.log_dir = os.fspath(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        games = tuple(getattr(self.env, "games", ()) or ())
        self.game_names: Tuple[str, ...] = tuple(dict.fromkeys(games)) if len(
            set(games)) > 1 else ()
        self._env_game = [self.game_names.index(g) for g in games] if self.game_names else []
        self.game_returns: Dict[str, Deque[float]] = {name: deque(maxlen=100)
                                                      for name in self.game_names}
        distinct = self.game_names or tuple(dict.fromkeys(games))
        self.hns_table = hns_table
        self.hns_games: Tuple[str, ...] = () if hns_table is None else tuple(
            g for g in distinct if scores.has_reference(g, hns_table))
        self.backend = "csv" if writer_class is None else "tensorboard"
        self._writer = (_CsvWriter(self.log_dir, self._columns(), follow_symlinks)
                        if writer_class is None
                        else _TensorBoardWriter(self.log_dir, writer_class))
        self.log_every = log_every
        self.global_step = 0  # agent steps so far, summed over envs
        self.episodes = 0
        self.last_return: Optional[float] = None
        self.env_returns = np.full(self.env.num_envs, np.nan)  # each env's latest game
        self.returns: Deque[float] = deque(maxlen=100)
        self.lengths: Deque[int] = deque(maxlen=100)

    # -- pass-through ------------------------------------------------------------------------
    def step(self, actions: Any):
        result = self.env.step(actions)
        self._record(np.arange(self.env.num_envs), result[-1])
        return result

    def send(self, actions: Any, env_ids: Any = None) -> None:
        env: Any = self.env  # a fastatari vector env: send/recv are not gymnasium's VectorEnv's
        env.send(actions, env_ids)

    def recv(self):
        env: Any = self.env
        result = env.recv()
        self._record(np.asarray(result[-1]["env_id"]), result[-1])
        return result

    def __getattr__(self, name: str) -> Any:
        # worker_pids, batch_size, options, ...: the wrapped env's public attributes
        if name.startswith("_") or name == "env":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    # -- statistics --------------------------------------------------------------------------
    def _record(self, env_ids: np.ndarray, info: Dict[str, Any]) -> None:
        before = self.global_step
        self.global_step += env_ids.size
        game = info.get(GAME_KEY)
        if game is not None:
            for j in np.flatnonzero(info["_" + GAME_KEY]):
                r, length = float(game["r"][j]), int(game["l"][j])
                self.env_returns[env_ids[j]] = r
                self.returns.append(r)
                self.lengths.append(length)
                self.last_return = r
                self.episodes += 1
                if self._env_game:
                    self.game_returns[self.game_names[self._env_game[env_ids[j]]]].append(r)
        if self.global_step // self.log_every > before // self.log_every:
            stats = self.stats()
            if stats is not None:  # a game has finished
                self._writer.write(self.global_step, stats)

    def _columns(self) -> Tuple[str, ...]:
        """The report's values, in CSV column order."""
        columns = FIELDS + tuple(_game_key(name) for name in self.game_names)
        if self.game_names:
            columns += tuple(f"{g}/hns_100" for g in self.hns_games)
            return columns + (("suite/median_hns", "suite/iqm_hns") if self.hns_games else ())
        return columns + (("mean_hns_100",) if self.hns_games else ())

    def stats(self) -> Optional[Dict[str, float]]:
        """The values a report holds now (None before the first finished game)."""
        if not self.episodes or self.last_return is None:
            return None
        stats: Dict[str, float] = {
            "last_return": self.last_return,
            "mean_return_100": float(np.mean(self.returns)),
            "min_return": float(np.nanmin(self.env_returns)),
            "max_return": float(np.nanmax(self.env_returns)),
            "mean_length": float(np.mean(self.lengths)),
            "episodes": self.episodes,
        }
        for name, returns in self.game_returns.items():
            if returns:
                stats[_game_key(name)] = float(np.mean(returns))
        table = self.hns_table
        if table is None:  # no hns_games either
            return stats
        if not self.game_names:
            if self.hns_games:
                stats["mean_hns_100"] = float(scores.human_normalized(
                    self.hns_games[0], stats["mean_return_100"], table))
            return stats
        hns = [float(scores.human_normalized(g, stats[_game_key(g)], table))
               for g in self.hns_games if _game_key(g) in stats]
        for g, value in zip([g for g in self.hns_games if _game_key(g) in stats], hns,
                            strict=True):
            stats[f"{g}/hns_100"] = value
        if hns:
            stats["suite/median_hns"] = float(np.median(hns))
            stats["suite/iqm_hns"] = scores.interquartile_mean(hns)
        return stats

    def close(self, **kwargs: Any) -> None:
        """Close the log and the wrapped env."""
        writer = self.__dict__.pop("_writer", None)  # closed once
        if writer is not None:
            writer.close()
        self.env.close(**kwargs)
