"""Prioritized replay with n-step returns (Schaul et al. 2016; Hessel et al. 2018), on the
compiled frame store and sum tree: what CleanRL's ``rainbow_atari.py`` does with its own
``PrioritizedReplayBuffer``, under the same constructor and calls."""

from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from fastatari.core import validate
from fastatari.replay._core import FrameStore, SumTree
from fastatari.replay.layout import check_rows, check_stacks, stack_layout, to_tensors

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


class PrioritizedReplayBuffer:
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

    New transitions get the largest priority so far. ``sample`` draws ``batch_size``
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
        self.max_priority = 1.0
        self.windows: List[Deque[_Step]] = [deque() for _ in range(self.n_envs)]

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
        """One step of every env (see the class); checked whole before anything is kept."""
        n = self.n_envs
        check_stacks("obs", obs, (n, *self.obs_shape))  # here: the windows keep them first
        check_stacks("next_obs", next_obs, (n, *self.obs_shape))
        action = check_rows("action", action, (n,), np.int64)
        reward = check_rows("reward", reward, (n,), np.float64)
        done = check_rows("done", done, (n,), bool)
        truncated = np.zeros(n, bool) if truncated is None else \
            check_rows("truncated", truncated, (n,), bool)
        for e in range(n):
            window = self.windows[e]
            window.append(_Step(obs[e].copy(), action[e], float(reward[e]), next_obs[e].copy(),
                                bool(done[e])))
            if done[e] or truncated[e]:  # the episode ended: every pending transition
                while window:
                    self._store(e, window)
                    window.popleft()
            elif len(window) == self.n_step:
                self._store(e, window)
                window.popleft()

    def _store(self, e: int, window: Deque[_Step]) -> None:
        """The transition from the window's first step over its steps (cut at a
        termination, which only the last may be)."""
        first, last = window[0], window[-1]
        ret = sum(self.gamma ** i * step.reward for i, step in enumerate(window))
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
        losses); checked before anything changes."""
        indices = np.asarray(indices)
        priorities = np.asarray(priorities, np.float64).reshape(-1)
        if indices.dtype.kind not in "iu" or indices.shape != priorities.shape:
            raise ValueError(f"one integer index per priority, got {indices.shape} indices "
                             f"and {priorities.shape} priorities")
        if not np.isfinite(priorities).all() or (priorities < 0).any():
            raise ValueError("priorities must be finite and >= 0 (NaN, inf or a negative "
                             "value given)")
        if indices.size and (indices.min() < 0 or indices.max() >= self.capacity
                             or (self.tree.get(indices) == 0).any()):
            raise IndexError("indices must be of stored transitions (from sample())")
        priorities = priorities + self.eps
        self.tree.set(indices, priorities ** self.alpha)
        self.max_priority = max(self.max_priority, float(priorities.max(initial=0.0)))

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """Everything to resume exactly, as NumPy arrays and numbers (``torch.save`` or
        pickle writes it): the frames, the columns, the priorities, ``beta`` and each env's
        pending n-step window."""
        windows = []
        for window in self.windows:
            shape = (len(window), *self.obs_shape)
            windows.append({
                "obs": np.array([step.obs for step in window], np.uint8).reshape(shape),
                "action": np.array([step.action for step in window], np.int64),
                "reward": np.array([step.reward for step in window], np.float64),
                "next_obs": np.array([step.next_obs for step in window], np.uint8).reshape(shape),
                "terminated": np.array([step.terminated for step in window], bool)})
        return {"stores": [store.state_dict() for store in self.stores],
                "actions": self.actions.copy(), "rewards": self.rewards.copy(),
                "dones": self.dones.copy(), "discounts": self.discounts.copy(),
                "priorities": self.tree.get(np.arange(self.capacity)),
                "max_priority": self.max_priority, "beta": self.beta, "windows": windows}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Take a :meth:`state_dict` of a buffer of the same shape; checked whole (frames
        included) before anything changes."""
        columns = {name: np.asarray(state[name]) for name in
                   ("actions", "rewards", "dones", "discounts", "priorities")}
        for name, array in columns.items():
            if array.shape != (self.capacity,):
                raise ValueError(f"the state's {name} has the shape {array.shape}, this "
                                 f"buffer's ({self.capacity},)")
        priorities = columns["priorities"].astype(np.float64)
        max_priority, beta = float(state["max_priority"]), float(state["beta"])
        if not (np.isfinite(priorities).all() and (priorities >= 0).all()
                and np.isfinite(max_priority) and max_priority > 0 and np.isfinite(beta)
                and beta >= 0):
            raise ValueError("the state's priorities must be finite and >= 0 (the largest > 0)"
                             ", its beta finite and >= 0")
        if len(state["stores"]) != self.n_envs or len(state["windows"]) != self.n_envs:
            raise ValueError(f"the state is of a buffer of {len(state['stores'])} envs, this "
                             f"one has {self.n_envs}")
        windows: List[Deque[_Step]] = []
        for saved in state["windows"]:
            obs, next_obs = np.asarray(saved["obs"]), np.asarray(saved["next_obs"])
            length = len(obs)
            if not (length < self.n_step and obs.shape == next_obs.shape
                    == (length, *self.obs_shape) and obs.dtype == next_obs.dtype == np.uint8
                    and all(len(saved[name]) == length
                            for name in ("action", "reward", "terminated"))):
                raise ValueError("the state's n-step windows do not fit this buffer")
            windows.append(deque(_Step(obs[t].copy(), int(saved["action"][t]),
                                       float(saved["reward"][t]), next_obs[t].copy(),
                                       bool(saved["terminated"][t])) for t in range(length)))
        # each store loaded into a new one first: a bad one leaves this buffer as it was
        stores = []
        for old, saved in zip(self.stores, state["stores"], strict=True):
            store = FrameStore(old.capacity, 1, old.obs_shape, old.stack, old.axis, old.disk)
            store.load_state_dict(saved)
            stores.append(store)
        self.stores, self.windows = stores, windows
        for name in ("actions", "rewards", "dones", "discounts"):
            getattr(self, name)[...] = columns[name]
        self.tree.set(np.arange(self.capacity), priorities)
        self.max_priority, self.beta = max_priority, beta
