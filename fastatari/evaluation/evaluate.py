"""Evaluate an agent the way papers do: a suite under a named protocol, every game at once in one
multi-game pool, per-game returns with intervals, human-normalized scores, and their aggregates.

``fastatari evaluate`` and :func:`evaluate` run ``episodes`` episodes of every game for each of
``seeds`` seeds: one env per episode, all in one vector env (worker processes, or Ray actors), each
env stepped until its episode ends and then left out of the steps (so no episode is cut short or
biased toward short ones). The result is deterministic for a seed: env ``i`` is reset with
``seed + i`` and the default policy (uniform random) draws from a generator seeded with ``seed``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import pkgutil
from dataclasses import asdict, dataclass, field
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence

import numpy as np

from fastatari._files import write_atomically
from fastatari.core import validate
from fastatari.core.games import resolve_game
from fastatari.core.protocols import protocol_options
from fastatari.evaluation import scores, suites
from fastatari.vector.assignment import resolve_games
from fastatari.vector.env import AtariVectorEnv
from fastatari.vector.plan import plan_vec
from fastatari.vector.pool import WorkerPool

__all__ = ["SUITES", "Evaluation", "GameResult", "evaluate", "load_policy", "plot_format"]

#: Suite names the command line takes.
SUITES: Dict[str, Sequence[str]] = {"atari5": suites.ATARI_5, "atari10": suites.ATARI_10,
                                    "atari57": suites.ATARI_57, "atari100k": suites.ATARI_100K}
_BOOTSTRAP = 2_000  # resamples of a game's per-episode returns for its interval


@dataclass
class GameResult:
    """One game's episodes: raw returns (``seeds x episodes``), their mean with a 95%
    bootstrap interval, and the mean's human-normalized score with the same interval mapped."""

    game: str
    returns: List[List[float]]
    lengths: List[List[int]]
    mean: float
    low: float
    high: float
    hns: float
    hns_low: float
    hns_high: float


@dataclass
class Evaluation:
    """What :func:`evaluate` measured; :meth:`to_json`, :meth:`write_csv` and
    :meth:`plot` write it."""

    games: List[str]
    protocol: str
    options: Dict[str, Any]
    episodes: int
    seeds: int
    seed: int
    table: str
    policy: str
    results: List[GameResult]
    aggregates: Dict[str, Dict[str, float]] = field(default_factory=dict)
    note: str = ""

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)

    def write_json(self, path: str, follow_symlinks: bool = False) -> None:
        """The whole record as JSON (:meth:`to_json`). Every writer here replaces ``path``
        whole (:func:`~fastatari._files.write_atomically`: missing folders created; a
        symbolic link refused with ``OSError`` unless ``follow_symlinks``)."""
        text = json.dumps(self.to_json(), indent=1).encode()
        write_atomically(path, lambda f: f.write(text), follow_symlinks)

    def write_csv(self, path: str, follow_symlinks: bool = False) -> None:
        """One row per game, then one per aggregate (its value in ``hns``)."""
        write_atomically(path, self._write_csv, follow_symlinks)

    def _write_csv(self, binary: BinaryIO) -> None:
        f = io.TextIOWrapper(binary, newline="")
        writer = csv.writer(f)
        writer.writerow(["game", "episodes", "mean_return", "return_low", "return_high",
                         "hns", "hns_low", "hns_high"])
        for r in self.results:
            writer.writerow([r.game, sum(map(len, r.returns)), r.mean, r.low, r.high, r.hns,
                             r.hns_low, r.hns_high])
        for name, value in self.aggregates.items():
            writer.writerow([f"aggregate:{name}", "", "", "", "", value["value"],
                             value["low"], value["high"]])
        f.flush()
        f.detach()  # the file stays the caller's to close

    def plot(self, path: str, follow_symlinks: bool = False) -> None:
        """The per-game HNS with their intervals, and the aggregates' intervals (the plot
        rliable popularised), in the format of ``path``'s extension (:func:`plot_format`).
        Needs matplotlib."""
        form = plot_format(path)
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        n = len(self.results)
        fig, axes = plt.subplots(1, 2, figsize=(12, max(3.0, 0.28 * n + 1.5)),
                                 gridspec_kw={"width_ratios": [3, 2]})
        games, ax = self.results, axes[0]
        y = np.arange(n)
        ax.barh(y, [r.hns for r in games], color="#4c72b0")
        ax.errorbar([r.hns for r in games], y, fmt="none", ecolor="black", capsize=2,
                    xerr=[[r.hns - r.hns_low for r in games], [r.hns_high - r.hns for r in games]])
        ax.set_yticks(y, [r.game for r in games])
        ax.invert_yaxis()
        ax.axvline(1.0, color="grey", linestyle=":")
        ax.set_xlabel(f"human-normalized score ({self.table})")
        ax.set_title(f"{self.protocol}, {self.episodes} episodes x {self.seeds} seeds")
        ax = axes[1]
        names = list(self.aggregates)
        for k, name in enumerate(names):
            value = self.aggregates[name]
            ax.plot([value["low"], value["high"]], [k, k], color="#dd8452", linewidth=8,
                    solid_capstyle="butt")
            ax.plot([value["value"]], [k], "k|", markersize=14)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlabel("aggregate HNS (95% stratified bootstrap)" if names else
                      "aggregates need rliable: pip install 'fastatari[eval]'")
        fig.tight_layout()
        try:
            write_atomically(path, lambda f: fig.savefig(f, format=form, dpi=100),
                             follow_symlinks)
        finally:
            plt.close(fig)

    def summary(self) -> str:
        """A text table: per game, then the aggregates."""
        lines = [f"{'game':<22}{'return (95% CI)':>34}{'HNS (95% CI)':>26}"]
        for r in self.results:
            lines.append(f"{r.game:<22}{r.mean:>14.1f} [{r.low:>8.1f}, {r.high:>8.1f}]"
                         f"{r.hns:>10.3f} [{r.hns_low:>6.3f}, {r.hns_high:>6.3f}]")
        for name, value in self.aggregates.items():
            lines.append(f"{name:<22}{'':>34}{value['value']:>10.3f} "
                         f"[{value['low']:>6.3f}, {value['high']:>6.3f}]")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


# -- the policy ------------------------------------------------------------------------------------
Policy = Callable[[np.ndarray], Any]


def load_policy(policy: Any) -> Policy:
    """A callable ``observations -> actions``: itself, ``"module:function"`` (imported), or the
    path of a TorchScript file (called on a uint8 tensor; its output, as numpy, are the
    actions).

    Loading a policy runs its code: importing a module runs it, and a TorchScript file is a
    program. Load only policies you trust as you would trust their code.

    Raises
    ------
    TypeError
        ``policy`` is none of these, or names something that is not callable.
    ValueError
        A file that is not TorchScript (``torch.jit.save``'s output; a ``state_dict`` is not
        one), or a ``module:function`` whose module has no such function.
    ImportError
        The module cannot be imported, or a file is given and torch is missing.
    """
    if callable(policy):
        return policy
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a callable, 'module:function' or a TorchScript file, "
                        f"got {type(policy).__name__}")
    if os.path.isfile(policy):
        try:
            import torch
        except ImportError:
            raise ImportError(f"the policy {policy!r} is a file: loading TorchScript needs "
                              f"torch (pip install torch)") from None
        try:
            module = torch.jit.load(policy, map_location="cpu")
        except Exception as error:  # torch raises RuntimeError, ValueError, pickle's errors
            raise ValueError(f"the policy file {policy!r} is not TorchScript (a "
                             f"torch.jit.save()d module; a state_dict or a pickled model is "
                             f"not one): {str(error).splitlines()[0]}") from None
        module.eval()

        def scripted(obs: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return module(torch.as_tensor(obs)).cpu().numpy()

        return scripted
    name, _, attribute = policy.partition(":")
    if not name or not attribute:
        raise ValueError(f"policy {policy!r} is neither a file nor 'module:function'")
    try:
        found = pkgutil.resolve_name(policy)
    except AttributeError as error:
        raise ValueError(f"policy {policy!r}: {error}") from None
    if not callable(found):
        raise TypeError(f"policy {policy!r} is a {type(found).__name__}, not a callable")
    return found


def _random_policy(num_actions: int, seed: int) -> Policy:
    rng = np.random.default_rng(seed)
    return lambda obs: rng.integers(0, num_actions, len(obs))


# -- the run ---------------------------------------------------------------------------------------
def _games(games: Any) -> List[str]:
    """A suite's games, one game, or distinct games in the order given."""
    if isinstance(games, str):
        return list(SUITES[games.lower()]) if games.lower() in SUITES else [resolve_game(games)]
    return list(resolve_games(games, distinct=True))


def _eval_protocol(protocol: Any) -> str:
    """``"<name>:eval"`` for ``protocol``, ``"<name>"`` or ``"<name>:eval"``."""
    protocol_options(protocol)  # TypeError or ValueError for anything but a protocol
    name, _, variant = protocol.partition(":")
    if variant not in ("", "eval"):
        raise ValueError(f"evaluate runs a protocol's evaluation variant: pass {name!r} or "
                         f"'{name}:eval', not {protocol!r}")
    return f"{name}:eval"


def plot_format(path: str) -> str:
    """The format :meth:`Evaluation.plot` writes ``path`` in: its extension's (``png``,
    ``pdf``, ``svg``, ... as matplotlib writes them), or PNG without one. ``ValueError`` for
    an extension matplotlib cannot write; ``ImportError`` without matplotlib."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ImportError("plots need matplotlib: pip install matplotlib") from None
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    if not ext:
        return "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext not in formats:
        raise ValueError(f"cannot plot to {path!r}: matplotlib writes {', '.join(sorted(formats))}"
                         f" (by the extension), not {ext!r}")
    return ext


def evaluate(games: Any = "atari5", *, protocol: str = "machado2018", episodes: int = 10,
             seeds: int = 1, policy: Any = None, seed: int = 0, table: str = scores.DEFAULT_TABLE,
             num_workers: Optional[int] = None, use_ray: bool = False, progress: bool = True,
             **options: Any) -> Evaluation:
    """Run ``episodes`` episodes of every game of ``games`` for each of ``seeds`` seeds under
    ``protocol``'s evaluation variant, and score them.

    Parameters
    ----------
    games : str or sequence of str
        A suite (``"atari5"``, ``"atari10"``, ``"atari57"``, ``"atari100k"``), a game, or a
        list or tuple of distinct games (its order fixes each game's seeds).
    protocol : str
        A protocol of :mod:`fastatari.core.protocols`; its ``:eval`` variant is used.
    episodes, seeds : int
        Episodes per game and seed; seeds (runs) per game.
    policy : callable, str or None
        ``observations (n, ...) uint8 -> actions (n,)``, ``"module:function"``, or a
        TorchScript file; None: uniform random. With several games the actions are ALE's 18
        (``full_action_space=True``, every game the same action set).
    seed : int
        Env ``i`` is reset with ``seed + i``; the random policy is seeded with it.
    table : str
        The reference table of :mod:`fastatari.evaluation.scores`.
    num_workers, use_ray
        Worker processes (default: usable cores), or ``fastatari.ray``'s actors.
    **options
        Options overriding the protocol's (``max_num_frames_per_episode=...``).
    progress : bool
        A tqdm bar of finished episodes (when tqdm is installed: the ``evaluate`` extra).

    Raises
    ------
    ValueError, TypeError
        Before any env starts: an unknown protocol, game or table, a game without a reference
        score in ``table``, games given as a set, none or one twice, bad counts, a policy that
        cannot be loaded (:func:`load_policy`) or whose actions have the wrong shape or are
        not valid actions.
    """
    names = _games(games)
    episodes = validate.check_int("episodes", episodes, 1)
    seeds = validate.check_int("seeds", seeds, 1)
    checked_seed = validate.check_seed(seed)
    if checked_seed is None:  # the record (Evaluation.seed) names the seed that reproduces it
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    seed = checked_seed
    for game in names:
        scores.reference(game, table)  # ValueError now, not after the run
    opts = {**protocol_options(_eval_protocol(protocol)), **options}
    if len(set(names)) > 1 and "full_action_space" not in options:
        opts["full_action_space"] = True  # one pool: every game the same (ALE's) actions
    per_env = [game for _ in range(seeds) for game in names for _ in range(episodes)]
    n = len(per_env)
    plan = plan_vec(per_env, n, num_workers=num_workers, **opts)
    act = _random_policy(plan.num_actions, seed) if policy is None else load_policy(policy)
    probe = np.zeros((2,) + plan.options.observation_shape, np.uint8)
    plan.check_actions(act(probe), 2)  # a bad policy fails before any env
    if use_ray:
        from fastatari.ray import RayAtariVectorEnv
        from fastatari.ray.executor import RayExecutor

        envs: AtariVectorEnv = RayAtariVectorEnv(plan, RayExecutor(plan))
    else:
        envs = AtariVectorEnv(plan, WorkerPool(plan))
    returns: np.ndarray = np.zeros(n)
    lengths: np.ndarray = np.zeros(n, np.int64)
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # the bar is tqdm's: pip install "fastatari[evaluate]"
            tqdm = None
        if tqdm is not None:
            bar = tqdm(total=n, desc="episodes", unit="ep", delay=0.5)
    try:
        obs, _ = envs.reset(seed=seed)
        obs = obs.copy()
        active = np.arange(n)
        while active.size:
            actions = plan.check_actions(act(obs[active]), active.size)
            envs.send(actions, env_ids=active)
            step_obs, reward, terminated, truncated, info = envs.recv()
            ids = info["env_id"]
            obs[ids] = step_obs
            returns[ids] += info["raw_reward"] if "raw_reward" in info else reward
            lengths[ids] += 1
            done = terminated | truncated
            if done.any():
                active = np.setdiff1d(active, ids[done])
                if bar is not None:
                    bar.update(int(done.sum()))
    finally:
        envs.close()
        if bar is not None:
            bar.close()

    # env order is (seed, game, episode): each game's returns are one slice
    returns = returns.reshape(seeds, len(names), episodes)
    lengths = lengths.reshape(seeds, len(names), episodes)
    rng = np.random.default_rng(seed)
    results = []
    for k, game in enumerate(names):
        flat = returns[:, k].ravel()
        means = rng.choice(flat, (_BOOTSTRAP, flat.size)).mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        mean = float(flat.mean())
        hns = [float(scores.human_normalized(game, v, table)) for v in (mean, low, high)]
        results.append(GameResult(game, returns[:, k].tolist(), lengths[:, k].tolist(),
                                  mean, float(low), float(high), *hns))
    evaluation = Evaluation(names, protocol, asdict(plan.options), episodes, seeds, seed, table,
                            "uniform random" if policy is None else str(policy), results)
    _aggregate(evaluation, returns)
    return evaluation


def _aggregate(evaluation: Evaluation, returns: np.ndarray) -> None:
    """Median, mean, IQM and optimality gap of the HNS over games (``returns``: seeds x games
    x episodes), each episode a run, with rliable's stratified-bootstrap intervals; a note
    instead when rliable is missing."""
    if len(evaluation.games) < 2:
        return
    columns = [scores.human_normalized(game, returns[:, k].ravel(), evaluation.table)
               for k, game in enumerate(evaluation.games)]
    try:
        estimates = scores.aggregate(np.stack(columns, axis=1), seed=evaluation.seed)
    except ImportError as error:
        evaluation.note = f"aggregates skipped: {error}"
        return
    evaluation.aggregates = {name: {"value": e.value, "low": e.low, "high": e.high}
                             for name, e in estimates.items()
                             if not any(math.isnan(x) for x in e)}
