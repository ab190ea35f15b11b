"""Prioritized replay with n-step returns (Schaul et al. 2016; Hessel et al. 2018), on the
compiled frame store and sum tree: what CleanRL's ``rainbow_atari.py`` does with its own
``PrioritizedReplayBuffer``, under the same constructor and calls."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from fastatari.core import validate
from fastatari.replay._core import FrameStore, SumTree
from fastatari.replay.layout import (
    as_numbers,
    check_rows,
    check_stacks,
    stack_layout,
    state_array,
    state_keys,
    state_number,
    to_tensors,
)
from fastatari.replay.saving import Saving

__all__ = ["PrioritizedBatch", "PrioritizedReplayBuffer"]


class PrioritizedBatch(NamedTuple):
    """A prioritized sample: CleanRL's fields (``(B, 1)`` columns), ``indices`` for
    :meth:`PrioritizedReplayBuffer.update_priorities`, importance ``weights`` (the batch's
    largest is 1) and each transition's bootstrap ``discounts`` (``gamma ** steps summed``:
    ``gamma ** n_step`` except for the last transitions of an episode cut by a time limit)."""

    observations: Any
    actions: Any
    rewards: Any
    next_observations: Any
    dones: Any
    indices: np.ndarray
    weights: Any
    discounts: Any


class _Step(NamedTuple):
    obs: np.ndarray
    action: Any
    reward: float
    next_obs: np.ndarray
    terminated: bool


class PrioritizedReplayBuffer(Saving):
    """``capacity`` transitions of ``n_envs`` envs (``capacity // n_envs`` each), n-step
    returns, proportional priorities.

    ``add(obs, action, reward, next_obs, done)`` takes one step of every env (arrays with a
    leading ``n_envs`` axis, as CleanRL passes them; ``next_obs`` the true last observation
    where an episode ended; ``done`` its terminations, and ``truncated=`` its time limits).
    Each env's last ``n_step`` steps wait in a window; a transition ``(obs_t, action_t,
    sum of gamma^i r_(t+i), next_obs_(t+m-1), terminated)`` is stored once its ``m = n_step``
    steps are known, and every pending one when an episode ends (cut there: ``dones`` says
    whether it ended by termination, ``discounts`` is ``gamma ** m``). CleanRL's class stores
    only the first of those, and drops the rest.

    New transitions get the largest priority so far; a priority whose
    ``(priority + eps) ** alpha`` passes :attr:`priority_limit` (float64's largest over the
    capacity rounded up to a power of two) is refused, so the sum tree stays finite.
    ``sample`` draws ``batch_size``
    transitions, one per equal slice of the total priority (with ``np.random``, as CleanRL),
    with weights ``(size * p / total) ** -beta`` over the batch's largest; ``beta`` is an
    attribute the caller anneals. ``update_priorities(indices, priorities)`` sets
    ``(priority + eps) ** alpha``. ``device`` None: NumPy arrays; else torch tensors there.
    """

    def __init__(self, capacity: int, obs_shape: Sequence[int], device: Any = None,
                 n_step: int = 1, gamma: float = 0.99, alpha: float = 0.6, beta: float = 0.4,
                 eps: float = 1e-6, *, n_envs: int = 1, frame_stack: Optional[int] = None,
                 stack_axis: Optional[int] = None, disk: Optional[str] = None) -> None:
        capacity = validate.check_int("capacity", capacity, 1)
        self.n_envs = validate.check_int("n_envs", n_envs, 1, capacity)
        self.n_step = validate.check_int("n_step", n_step, 1)
        for name, value in (("gamma", gamma), ("alpha", alpha), ("beta", beta), ("eps", eps)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        with np.errstate(over="ignore"):
            discount = np.float64(gamma) ** self.n_step
        if not discount <= np.finfo(np.float32).max:
            raise ValueError(f"gamma ** n_step must be a finite float32 (the discounts), got "
                             f"{gamma!r} ** {self.n_step}")
        stack, axis = stack_layout(obs_shape, frame_stack, stack_axis)
        self.device = device
        self.gamma, self.alpha, self.beta, self.eps = float(gamma), float(alpha), float(beta), \
            float(eps)
        self.per_env = capacity // self.n_envs
        self.capacity = self.per_env * self.n_envs
        self.obs_shape = tuple(int(d) for d in obs_shape)
        # one store per env: each env's window emits its transitions at its own pace
        self.stores = [FrameStore(self.per_env, 1, self.obs_shape, stack, axis, disk)
                       for _ in range(self.n_envs)]
        self.actions = np.zeros(self.capacity, np.int64)
        self.rewards = np.zeros(self.capacity, np.float32)
        self.dones = np.zeros(self.capacity, bool)
        self.discounts = np.zeros(self.capacity, np.float32)
        self.tree = SumTree(self.capacity)
        #: The largest priority the tree holds, ``(priority + eps) ** alpha``: float64's
        #: largest over the tree's leaves (capacity rounded up to a power of two), so that
        #: every sum in the tree is finite (and, recomputed from its two halves at each
        #: change, exact to float64's rounding).
        self.priority_limit = float(np.finfo(np.float64).max / self.tree.leaves)
        self.max_priority = 1.0
        self.windows: List[Deque[_Step]] = [deque() for _ in range(self.n_envs)]

    @property
    def disk(self) -> Optional[str]:
        """The folder the frames live in, or None (in memory)."""
        return self.stores[0].disk

    def init_args(self) -> Dict[str, Any]:
        store = self.stores[0]
        return {"capacity": self.capacity, "obs_shape": self.obs_shape, "n_step": self.n_step,
                "gamma": self.gamma, "alpha": self.alpha, "beta": self.beta, "eps": self.eps,
                "n_envs": self.n_envs, "frame_stack": store.stack, "stack_axis": store.axis}

    @property
    def size(self) -> int:
        """Transitions stored."""
        return sum(store.size for store in self.stores)

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        return sum(store.nbytes for store in self.stores) + sum(
            a.nbytes for a in (self.actions, self.rewards, self.dones, self.discounts))

    # -- adding --------------------------------------------------------------------------------
    def add(self, obs: np.ndarray, action: Any, reward: Any, next_obs: np.ndarray, done: Any,
            truncated: Any = None) -> None:
        """One step of every env (see the class). Every argument is checked and converted
        first (:func:`~fastatari.replay.layout.check_rows`: whole-number actions, finite
        rewards, boolean or 0/1 flags; TypeError or ValueError naming it), and the
        transitions the step completes are worked out (their n-step returns must be finite
        in float32) before anything is kept: whole or nothing."""
        n = self.n_envs
        check_stacks("obs", obs, (n, *self.obs_shape))
        check_stacks("next_obs", next_obs, (n, *self.obs_shape))
        action = check_rows("action", action, (n,), np.int64)
        reward = check_rows("reward", reward, (n,), np.float64)
        done = check_rows("done", done, (n,), bool)
        truncated = np.zeros(n, bool) if truncated is None else \
            check_rows("truncated", truncated, (n,), bool)
        plans = []
        for e in range(n):
            steps = [*self.windows[e], _Step(obs[e].copy(), int(action[e]), float(reward[e]),
                                             next_obs[e].copy(), bool(done[e]))]
            if done[e] or truncated[e]:  # the episode ended: every pending transition
                emitted, kept = [steps[i:] for i in range(len(steps))], []
            elif len(steps) == self.n_step:
                emitted, kept = [steps], steps[1:]
            else:
                emitted, kept = [], steps
            returns = [self._return(window) for window in emitted]
            plans.append((emitted, returns, kept))
        for e, (emitted, returns, kept) in enumerate(plans):
            for window, ret in zip(emitted, returns, strict=True):
                self._store(e, window, ret)
            self.windows[e] = deque(kept)

    def _return(self, window: List[_Step]) -> float:
        """The n-step return of ``window`` (ValueError where float32 cannot hold it)."""
        ret = sum(self.gamma ** i * step.reward for i, step in enumerate(window))
        if not abs(ret) <= float(np.finfo(np.float32).max):
            raise ValueError(f"reward: the n-step return {ret!r} of these rewards is not a "
                             f"finite float32")
        return ret

    def _store(self, e: int, window: List[_Step], ret: float) -> None:
        """The transition from the window's first step over its steps (cut at a
        termination, which only the last may be), its return ``ret``."""
        first, last = window[0], window[-1]
        store = self.stores[e]
        index = e * self.per_env + store.pos
        # past the stack size, an observation is the next one of the transition n back
        store.put(first.obs[None], last.next_obs[None], lookback=self.n_step)
        self.actions[index], self.rewards[index] = first.action, ret
        self.dones[index], self.discounts[index] = last.terminated, self.gamma ** len(window)
        self.tree.set(np.array([index]), np.array([self.max_priority ** self.alpha]))

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, batch_size: int) -> PrioritizedBatch:
        """``batch_size`` transitions, one from each equal slice of the total priority."""
        batch_size = validate.check_int("batch_size", batch_size, 1)
        if not self.size:
            raise ValueError("cannot sample from an empty replay buffer")
        if not self.tree.total > 0:
            raise ValueError("every stored priority is 0 (eps=0): nothing to draw until "
                             "update_priorities gives one more")
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)) \
                or not 0 <= self.beta < float("inf"):
            raise ValueError(f"beta must be a finite number >= 0, got {self.beta!r}")
        # one uniform per slice of the total priority, drawn as CleanRL's np.random.uniform
        indices, weights = self.tree.draw(np.random.random_sample(batch_size), self.beta,
                                          self.size)
        obs, next_obs = self._stacks(indices)
        # (rows first, then the column axis: [indices, None] is a slower, general indexing)
        data: List[Any] = [obs, self.actions[indices][:, None], self.rewards[indices][:, None],
                           next_obs, self.dones[indices][:, None], weights[:, None],
                           self.discounts[indices][:, None]]
        if self.device is not None:
            data = to_tensors(data, self.device)
        obs, actions, rewards, next_obs, dones, weights_, discounts = data
        return PrioritizedBatch(obs, actions, rewards, next_obs, dones, indices, weights_,
                                discounts)

    def _stacks(self, indices: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        envs, slots = np.divmod(indices, self.per_env)
        out_obs, out_next = np.empty((2, indices.size) + self.obs_shape, np.uint8)
        for e in np.unique(envs).tolist():
            rows = np.flatnonzero(envs == e)
            self.stores[e].gather(slots[rows], np.zeros(rows.size, np.int64), out_obs,
                                  out_next, rows)
        return out_obs, out_next

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set the priorities of sampled transitions (``priorities`` >= 0, e.g. their
        losses) to ``(priority + eps) ** alpha``; checked whole before anything changes:
        integer ``indices`` (TypeError otherwise) of stored transitions (IndexError), one
        finite priority >= 0 each whose ``(priority + eps) ** alpha`` is at most
        :attr:`priority_limit` (ValueError). A transition of priority 0 (``eps=0``) is never
        drawn, and may be updated again."""
        indices = as_numbers("indices", indices)
        if indices.dtype.kind not in "iu":
            raise TypeError(f"indices must be integers, got {indices.dtype}")
        priorities = as_numbers("priorities", priorities).astype(np.float64).reshape(-1)
        if indices.shape != priorities.shape:
            raise ValueError(f"one integer index per priority, got {indices.shape} indices "
                             f"and {priorities.shape} priorities")
        if not np.isfinite(priorities).all() or (priorities < 0).any():
            raise ValueError("priorities must be finite and >= 0 (NaN, inf or a negative "
                             "value given)")
        if not self._stored(indices).all():
            raise IndexError("indices must be of stored transitions (from sample())")
        priorities = priorities + self.eps
        with np.errstate(over="ignore"):
            values = priorities ** self.alpha
        if not (values <= self.priority_limit).all():
            raise ValueError(f"priorities must keep (priority + eps) ** alpha at most "
                             f"{self.priority_limit:.4g} (priority_limit: the sum tree's "
                             f"sums stay finite), got {priorities.max() - self.eps!r}")
        self.tree.set(indices.astype(np.int64), values)
        self.max_priority = max(self.max_priority, float(priorities.max(initial=0.0)))

    def _stored(self, indices: np.ndarray) -> np.ndarray:
        """Which of ``indices`` (integers) are of stored transitions."""
        sizes = np.array([store.size for store in self.stores])
        inside = (indices >= 0) & (indices < self.capacity)
        envs, slots = np.divmod(np.where(inside, indices, 0).astype(np.int64), self.per_env)
        return inside & (slots < sizes[envs])

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self, pieces: bool = False) -> Dict[str, Any]:
        """Everything to resume exactly, as NumPy arrays and numbers (``torch.save`` or
        pickle writes it; :mod:`fastatari.checkpoint` saves it incrementally): the frames
        (``pieces``: as views of the stores' chunks, ``FrameStore.state_dict``), the columns,
        the priorities, ``beta`` and each env's pending n-step window."""
        windows = []
        for window in self.windows:
            shape = (len(window), *self.obs_shape)
            windows.append({
                "obs": np.array([step.obs for step in window], np.uint8).reshape(shape),
                "action": np.array([step.action for step in window], np.int64),
                "reward": np.array([step.reward for step in window], np.float64),
                "next_obs": np.array([step.next_obs for step in window], np.uint8).reshape(shape),
                "terminated": np.array([step.terminated for step in window], bool)})
        return {"stores": [store.state_dict(pieces) for store in self.stores],
                "actions": self.actions.copy(), "rewards": self.rewards.copy(),
                "dones": self.dones.copy(), "discounts": self.discounts.copy(),
                "priorities": self.tree.get(np.arange(self.capacity)),
                "max_priority": self.max_priority, "beta": self.beta, "windows": windows}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Take a :meth:`state_dict` of a buffer of the same shape; checked whole (every key,
        dtype, shape and range, the frames, and the relations between them: priorities only
        on stored transitions, within :attr:`priority_limit`) before anything changes.
        TypeError for a value of the wrong type, ValueError for one out of range."""
        state_keys("a PrioritizedReplayBuffer state", state,
                   ("stores", "actions", "rewards", "dones", "discounts", "priorities",
                    "max_priority", "beta", "windows"))
        columns = {name: state_array(name, state[name], (self.capacity,),
                                     getattr(self, name).dtype)
                   for name in ("actions", "rewards", "dones", "discounts")}
        priorities = state_array("priorities", state["priorities"], (self.capacity,),
                                 np.float64)
        max_priority = state_number("max_priority", state["max_priority"], "f")
        beta = state_number("beta", state["beta"], "f")
        if (columns["discounts"] < 0).any() or (priorities < 0).any() or beta < 0:
            raise ValueError("the state's discounts, priorities and beta must be >= 0")
        with np.errstate(over="ignore"):
            largest = max_priority ** self.alpha if max_priority > 0 else np.inf
        if not (priorities <= self.priority_limit).all() or not largest <= self.priority_limit:
            raise ValueError(f"the state's priorities must be at most priority_limit "
                             f"{self.priority_limit:.4g}, and its max_priority > 0 with "
                             f"max_priority ** alpha within it")
        saved_stores = _sequence("stores", state["stores"], self.n_envs)
        saved_windows = _sequence("windows", state["windows"], self.n_envs)
        checked = [store.checked_state(saved) for store, saved
                   in zip(self.stores, saved_stores, strict=True)]
        for e, store_state in enumerate(checked):
            size = self.per_env if store_state["full"] else store_state["pos"]
            if priorities[e * self.per_env + size:(e + 1) * self.per_env].any():
                raise ValueError(f"the state's priorities give env {e}'s slots from {size} "
                                 f"on, which hold no transition, a priority")
        windows = [deque(self._window(e, saved)) for e, saved in enumerate(saved_windows)]
        # nothing below can fail: the checked stores loaded into new ones, then the rest
        stores = []
        for old, store_state in zip(self.stores, checked, strict=True):
            store = FrameStore(old.capacity, 1, old.obs_shape, old.stack, old.axis, old.disk)
            store.load_checked(store_state)
            stores.append(store)
        self.stores, self.windows = stores, windows
        for name in ("actions", "rewards", "dones", "discounts"):
            getattr(self, name)[...] = columns[name]
        self.tree.set(np.arange(self.capacity), priorities)
        self.max_priority, self.beta = max_priority, beta

    def _window(self, e: int, saved: Any) -> List[_Step]:
        """Env ``e``'s pending n-step window from a state, checked."""
        name = f"windows[{e}]"
        state_keys(f"the state's {name}", saved,
                   ("obs", "action", "reward", "next_obs", "terminated"))
        length = len(np.asarray(saved["obs"]))
        if not length < self.n_step:
            raise ValueError(f"the state's {name} holds {length} steps, more than the "
                             f"{self.n_step - 1} an n-step window keeps")
        shape = (length, *self.obs_shape)
        obs = state_array(f"{name}.obs", saved["obs"], shape, np.uint8)
        next_obs = state_array(f"{name}.next_obs", saved["next_obs"], shape, np.uint8)
        action = state_array(f"{name}.action", saved["action"], (length,), np.int64)
        reward = state_array(f"{name}.reward", saved["reward"], (length,), np.float64)
        terminated = state_array(f"{name}.terminated", saved["terminated"], (length,), bool)
        if terminated.any():
            raise ValueError(f"the state's {name} holds a terminated step: an ended "
                             f"episode's steps are never pending")
        return [_Step(obs[t], int(action[t]), float(reward[t]), next_obs[t], False)
                for t in range(length)]


def _sequence(name: str, value: Any, length: int) -> Sequence[Any]:
    """A state's list ``name`` of ``length`` items (one per env)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"the state's {name} must be a list (one per env), got "
                        f"{type(value).__name__}")
    if len(value) != length:
        raise ValueError(f"the state's {name} is of a buffer of {len(value)} envs, this one "
                         f"has {length}")
    return value
