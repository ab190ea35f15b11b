"""The plan of a vector env: everything it is, decided and checked before any process starts.

:func:`plan_vec` turns ``game, num_envs, **keywords`` into a :class:`VectorPlan`: the assignment of
games with each one's options (checked against the ROM's facts), the shared action set, the
layout of the shared memory and the front's settings. Every front end reads the one plan:
``fastatari.make_vec`` runs it on local worker processes, ``fastatari.ray`` on Ray actors,
``fastatari.envpool`` translates EnvPool's names into it, ``fastatari evaluate`` reads its
action set. The local-worker settings ride along as given; the worker pool checks them where it
starts the workers.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from fastatari.core import validate
from fastatari.core.continuous import check_continuous_actions
from fastatari.core.game import ALE_ACTIONS
from fastatari.core.options import AtariOptions
from fastatari.core.protocols import apply_protocol
from fastatari.core.romfacts import loaded_facts
from fastatari.vector.assignment import Assignment, make_assignment
from fastatari.vector.buffers import OUTPUT_SLOTS, Layout
from fastatari.vector.config import VectorConfig, split_keywords

__all__ = ["VectorPlan", "plan_vec"]


@dataclasses.dataclass(frozen=True)
class VectorPlan:
    """A vector env's games, options, actions, memory layout and settings. Picklable: a Ray
    actor runs its block of the plan (:meth:`block`)."""

    assignment: Assignment  # the game and options of each env
    options: AtariOptions  # the options every game shares
    env_ids: Tuple[int, ...]  # the envs' ids in the whole vector env (an unseeded env's seed base)
    config: VectorConfig  # the front's settings, checked
    workers: Mapping[str, Any]  # the local-worker keywords as given (WorkerSettings' fields)
    layout: Layout  # the shared memory's columns
    action_meanings: Tuple[str, ...]  # the action set every env shares
    ale_actions: bool = False  # actions are ALE's 18 for every env (several games)

    @property
    def num_envs(self) -> int:
        return len(self.env_ids)

    @property
    def num_actions(self) -> int:
        return len(self.action_meanings)

    def check_actions(self, actions: Any, count: int) -> np.ndarray:
        """``count`` envs' actions, checked (``TypeError``/``ValueError``) and converted."""
        if self.options.continuous:
            return check_continuous_actions(actions, (count, 3))
        return validate.check_actions(actions, count, self.num_actions)

    def block(self, start: int, stop: int) -> "VectorPlan":
        """The plan of envs ``start .. stop - 1`` alone (a Ray actor's): their games, numbered
        as in this plan (``info["game_index"]``), a batch no larger than the block, and no
        output or batch slots and no copies (its results go back through the driver's)."""
        assignment = dataclasses.replace(self.assignment, games=self.assignment.games[start:stop])
        size = stop - start
        return dataclasses.replace(
            self, assignment=assignment, env_ids=self.env_ids[start:stop],
            config=dataclasses.replace(self.config, copy=False,
                                       batch_size=min(self.config.batch_size or size, size)),
            layout=dataclasses.replace(self.layout, num_envs=size, outputs=0, batch_slots=0,
                                       batch_size=0))


def plan_vec(game: str | Sequence[str], num_envs: int, **keywords: Any) -> VectorPlan:
    """The checked plan of ``fastatari.make_vec(game, num_envs, **keywords)``, starting nothing.

    Parameters are :func:`fastatari.make_vec`'s. Raises what the vector env would
    (``ValueError``, ``TypeError``) for bad games, options or settings, games whose options
    their ROM cannot play, or games whose action sets differ without ``full_action_space``;
    ``num_workers``, ``cpus`` and ``balance`` are checked by the executor that uses them.
    """
    num_envs = validate.check_int("num_envs", num_envs, 1)
    front, workers, options = split_keywords(apply_protocol(keywords))
    config = VectorConfig.checked(num_envs, **front)
    assignment, common = make_assignment(game, num_envs, options)
    ale_actions = assignment.multi and common.full_action_set  # several games: ALE's 18 actions
    meanings = shared_action_meanings(assignment, ale_actions)
    layout = Layout(num_envs, common.observation_shape, common.continuous)
    validate.check_fits_in_memory(
        f"num_envs={num_envs} envs with observations of shape "
        f"{common.observation_shape} (their shared memory)", layout.nbytes)
    # the output slots (sync steps, copy=True) and the batch slots (recv), in pages touched
    # only once used: a caller holds one or two batches while the workers fill those ahead
    batch = config.batch_size or num_envs
    with_outputs = dataclasses.replace(
        layout, outputs=OUTPUT_SLOTS if config.copy else 0,
        batch_slots=-(-num_envs // batch) + 2, batch_size=batch)
    if with_outputs.nbytes <= (validate.physical_memory() or math.inf):
        layout = with_outputs  # else each step and recv copies the observations
    return VectorPlan(assignment, common, tuple(range(num_envs)), config, dict(workers), layout,
                      tuple(meanings), ale_actions)


def shared_action_meanings(assignment: Assignment, ale_actions: bool) -> List[str]:
    """Check each game's options against its ROM's facts (mode, difficulty, NOOP, FIRE,
    screen size: ``ValueError``) and return the action names every env shares (``ValueError``
    if the games' differ). The facts come from the table shipped for this ale-py, else from the
    ROM loaded once in this process."""
    meanings: Dict[str, List[str]] = {}
    for name in assignment.names:
        options = assignment.options[name]
        facts = loaded_facts(name)
        facts.check(options)
        meanings[name] = list(facts.actions(options.full_action_set))
    if ale_actions:
        return [a.name for a in ALE_ACTIONS]
    first = meanings[assignment.names[0]]
    differ = [name for name in assignment.names if meanings[name] != first]
    if differ:
        raise ValueError(f"these games have different action sets ({assignment.names[0]}: "
                         f"{first}; {differ[0]}: {meanings[differ[0]]}): pass "
                         f"full_action_space=True to give every env the 18 actions")
    return first
