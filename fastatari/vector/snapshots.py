"""Clone and restore envs of a vector env, and checkpoint the whole of it (a mixin of
:class:`fastatari.vector.env.AtariVectorEnv`; the same over worker processes and Ray actors).

The workers take and put back each game's state in one command per worker (the executor's
``clone``/``restore``); the trainer adds what it alone knows of each env (its episode ended and
awaits an autoreset, its last seed) and checks every snapshot before any env is touched.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, cast

from gymnasium.vector import AutoresetMode

from fastatari.core import validate
from fastatari.core.snapshot import FORMAT, EnvSnapshot, GameState, check_snapshots, warn_if_inexact
from fastatari.vector.calls import CallOrder, State, one_caller
from fastatari.vector.executor import Executor, check_command, raised_envs
from fastatari.vector.plan import VectorPlan

__all__ = ["Snapshots"]


class Snapshots(CallOrder):
    """``clone``, ``restore``, ``state_dict`` and ``load_state_dict`` over the vector env's
    plan, executor and per-env bookkeeping (its ``book``)."""

    num_envs: int
    plan: VectorPlan
    executor: Executor
    autoreset_mode: AutoresetMode

    @one_caller
    def clone(self, env_ids: Any = None) -> List[EnvSnapshot]:
        """Snapshots of ``env_ids`` (default: all), one per env, in that order.

        Each holds the env's whole state: the emulator with its random generator (sticky
        actions), the no-op generator, the frame stack, lives, the game's statistics, and an
        ended episode's pending autoreset. :meth:`restore` puts it back into any env of the same
        game and options (here, in another vector env with any number of workers, in another
        process, or an :class:`~fastatari.AtariEnv`), which then continues exactly as this one
        would have. The envs must be idle (not sent without ``recv``); others may be in flight.

        ``WorkerError`` when a worker dies or raises meanwhile: its envs start new games
        (reported with ``info["worker_restarted"]`` at their next step) and no snapshot is
        returned, since one would describe a game the caller never had.
        """
        self._check_open()
        self._check_was_reset("clone")
        ids = validate.check_env_ids(env_ids, self.num_envs)
        self.book.check_idle(ids, "clone")
        states, replies = self.executor.clone(ids)
        self.book.apply(replies)
        check_command(replies, "clone", ids)  # a worker's death took some of the states
        seeds, assignment = self.executor.seeds.last, self.plan.assignment
        ended = self.book.ended_of(ids)
        return [EnvSnapshot(assignment.games[i], assignment.options[assignment.games[i]],
                            cast(GameState, state), ended=bool(ended[j]), seed=seeds[i])
                for j, (i, state) in enumerate(zip(ids.tolist(), states, strict=True))]

    @one_caller
    def restore(self, snapshots: Sequence[EnvSnapshot], env_ids: Any = None) -> None:
        """Put ``snapshots`` (from :meth:`clone`, one per env of ``env_ids``, default all) back
        into ``env_ids``: one command per worker. Each env then continues exactly as the cloned
        one would have; a pending autoreset comes with it.

        ``ValueError`` before any env changes for a snapshot of another game or other options,
        a damaged copy or a foreign object, and for an ended episode's snapshot in a vector env
        with same-step autoreset (whose envs never wait for one). Before the first reset every
        env must be restored (they then need no reset).
        """
        self._check_open()
        ids = validate.check_env_ids(env_ids, self.num_envs)
        self.book.check_idle(ids, "restore")
        snapshots = check_snapshots(snapshots, ids.size)
        if self._state is State.NEEDS_RESET and ids.size != self.num_envs:
            self._check_was_reset("restore a subset of envs")
        games, options = self.plan.assignment.games, self.plan.assignment.options
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        for i, snap in zip(ids.tolist(), snapshots, strict=True):
            snap.check(games[i], options[games[i]])
            if snap.ended and same_step:
                raise ValueError(f"the snapshot for env {i} holds an ended episode awaiting its "
                                 f"autoreset: a same-step vector env has no such state")
        for game in dict.fromkeys(snap.game for snap in snapshots):
            warn_if_inexact(game)
        replies = self.executor.restore([(i, snap.state)
                                         for i, snap in zip(ids.tolist(), snapshots,
                                                            strict=True)])
        self.book.apply(replies)
        # the envs of a worker that raised start new games; the others hold their snapshots
        raised = raised_envs(replies)
        restored = [(i, snap) for i, snap in zip(ids.tolist(), snapshots, strict=True)
                    if i not in raised]
        book = self.executor.seeds
        for i, snap in restored:
            book.last[i] = snap.seed
        book.games_exist = True
        self.book.set([i for i, _ in restored], [snap.ended for _, snap in restored], False)
        check_command(replies, "restore")
        if self._state is State.NEEDS_RESET:
            self._state = State.IDLE

    def state_dict(self) -> Dict[str, Any]:
        """The whole vector env (every env's snapshot, so its seeds and pending autoresets
        too), picklable: :meth:`load_state_dict` puts it back into a vector env of the same
        games and options with any number of workers, in any process. No step may be in
        flight; ``WorkerError`` as :meth:`clone`.

        Unpickling runs code named in the pickle (``torch.load(..., weights_only=False)``,
        ``pickle.load``): load only checkpoints you trust. Each snapshot's digest finds
        damage, not forgery."""
        self._check_not_async("state_dict")
        return {"format": FORMAT, "num_envs": self.num_envs,
                "autoreset_mode": self.autoreset_mode.value, "envs": self.clone()}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` (``ValueError`` for another number of envs, other
        games or options, or a damaged state, before any env changes)."""
        self._check_not_async("load_state_dict")
        if not isinstance(state, dict) or state.get("format") != FORMAT or "envs" not in state:
            raise ValueError("not a fastatari vector env state_dict (of this format)")
        if state["num_envs"] != self.num_envs:
            raise ValueError(f"state_dict of {state['num_envs']} envs for a vector env of "
                             f"{self.num_envs}")
        self.restore(state["envs"])
