"""gymnasium's vector-env contract, shared by the local vector env and the Ray one: the call
order as an explicit state with gymnasium's exceptions, one caller at a time, the autoreset
modes' names, and the ``reset_mask`` option's checks."""

from __future__ import annotations

import copy
import enum
import functools
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, TypeVar, cast

import numpy as np
from gymnasium import spaces
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    NoAsyncCallError,
    ResetNeeded,
)
from gymnasium.vector import AutoresetMode

from fastatari.vector._step import CallGuard

if TYPE_CHECKING:
    from fastatari.vector.book import EnvBook

__all__ = ["BatchedBox", "CallOrder", "ConcurrentCallError", "Phase", "State",
           "autoreset_mode", "one_caller", "reset_mask"]

F = TypeVar("F", bound=Callable[..., Any])


class ConcurrentCallError(RuntimeError):
    """A call made while another thread's call on the same env is running."""


def one_caller(method: F, call: str = "") -> F:
    """Refuse a call while another thread's call on the same env runs.

    A vector env serves one thread at a time, as gymnasium's do; two threads inside it would
    mix their commands in the workers' shared memory. Instead of mixed results or a hang, the
    second caller gets :class:`ConcurrentCallError` at once and the first call goes on
    untouched. The same thread may re-enter (a ``close()`` from a signal handler). The guard
    is the env's ``_caller`` (:class:`~fastatari.vector._step.CallGuard`), which the common
    step's compiled path enters itself. ``call``: the call's name in the errors (default: the
    method's).
    """
    name = call or method.__name__

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        caller = self.__dict__.get("_caller") or self.__dict__.setdefault("_caller", CallGuard())
        entered = caller.enter(name)
        if entered < 0:
            raise ConcurrentCallError(
                f"{type(self).__name__}.{name}() called while another thread's "
                f"{caller.call}() is running: a vector env serves one thread at a time (as "
                f"gymnasium's do); give each thread its own env, or hold a lock around the "
                f"calls. The env is unchanged.")
        try:
            return method(self, *args, **kwargs)
        finally:
            if entered:
                caller.leave()

    return cast(F, guarded)  # functools.wraps keeps the signature

# gymnasium's enum, its values ("NextStep", ...) and fastatari's snake-case names
_AUTORESET_MODES = {key: mode for mode in AutoresetMode
                    for key in (mode, mode.value, mode.name.lower())}


def autoreset_mode(value: Any) -> AutoresetMode:
    mode = _AUTORESET_MODES.get(value) if isinstance(value, (str, AutoresetMode)) else None
    if mode is None:
        raise ValueError(f"autoreset_mode must be 'next_step', 'same_step' or 'disabled' (or "
                         f"gymnasium's AutoresetMode), got {value!r}")
    return mode


def reset_mask(options: Optional[Dict[str, Any]], num_envs: int,
               first_reset: bool) -> Optional[np.ndarray]:
    """``options["reset_mask"]`` checked as gymnasium's vector envs check it (TypeError for a
    non-bool array, ValueError for a wrong shape or no env); None when it selects every env."""
    if not options or "reset_mask" not in options:
        return None
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        raise TypeError(f"reset_mask must be a numpy bool array, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"reset_mask must have shape ({num_envs},), got {mask.shape}")
    if not mask.any():
        raise ValueError("reset_mask selects no env")
    if first_reset and not mask.all():
        raise ValueError("the first reset() must reset every env (no reset_mask)")
    return None if mask.all() else mask


class _FullOnRead:
    """A bound of :class:`BatchedBox`: the single env's bound broadcast (no memory) until it is
    first read, then a full writable array, as ``batch_space`` gives (libraries turn the
    bounds into tensors, and torch warns about read-only arrays)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = "_" + name

    def __get__(self, box: Any, owner: Any = None) -> Any:
        if box is None:
            return self
        value = box.__dict__[self.name]
        if not value.flags.writeable and not box.__dict__.get("_on_views"):
            value = box.__dict__[self.name] = np.array(value)  # still the broadcast view
        return value

    def __set__(self, box: Any, value: Any) -> None:
        box.__dict__[self.name] = value


def _on_views(method: Callable[..., Any]) -> Callable[..., Any]:
    """``spaces.Box``'s own ``method``, reading the broadcast bounds of every BatchedBox it
    is given (equality, ``contains``, ``sample`` and ``repr`` need no full copy)."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        boxes = [box for box in (self, *args) if isinstance(box, BatchedBox)]
        for box in boxes:
            box.__dict__["_on_views"] = True
        try:
            return method(self, *args, **kwargs)
        finally:
            for box in boxes:
                box.__dict__["_on_views"] = False
    return run


class BatchedBox(spaces.Box):
    """``gymnasium.vector.utils.batch_space(single, n)`` without its four ``(n, *shape)``
    arrays (bounds and boundedness: 113 KB per Atari env, 11 GB for 100,000 envs before any
    step): boundedness is a read-only broadcast view of the single env's, and so are ``low``
    and ``high`` until something outside the space reads them (gymnasium's own methods here
    read the views). A ``Box`` in every other respect (equality,
    ``contains``, ``sample``); it pickles as the single space and ``n``."""

    low = _FullOnRead()
    high = _FullOnRead()
    contains = _on_views(spaces.Box.contains)
    sample = _on_views(spaces.Box.sample)
    __eq__ = _on_views(spaces.Box.__eq__)
    __repr__ = _on_views(spaces.Box.__repr__)

    def __init__(self, single: spaces.Box, n: int) -> None:
        super().__init__(single.low, single.high, dtype=single.dtype,
                         seed=copy.deepcopy(single.np_random))
        self._single, self._n = single, n
        self._shape = (n,) + single.shape
        for name in ("_low", "_high", "bounded_below", "bounded_above"):
            setattr(self, name, np.broadcast_to(getattr(self, name), self._shape))

    def __reduce__(self) -> Any:
        return BatchedBox, (self._single, self._n)


class Phase(enum.IntEnum):
    """Where one env's step is (the vector env keeps one per env)."""

    IDLE = 0
    IN_FLIGHT = 1  # sent to what runs it, not answered yet
    ANSWERED = 2  # answered, waiting for recv()


class State(enum.Enum):
    NEEDS_RESET = "needs reset"
    IDLE = "idle"
    ASYNC = "async steps pending"  # some env sent and not yet returned by recv()
    CLOSED = "closed"


class CallOrder:
    """The checks of a call's place in the order, and the env as a context manager (a mixin):
    an env with ``_state``, its per-env ``book``, gymnasium's ``metadata`` and ``close()``."""

    _state: State
    book: "EnvBook"
    metadata: Dict[str, Any]

    def close(self, **kwargs: Any) -> None:
        raise NotImplementedError

    def __enter__(self) -> "CallOrder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # a weakref finalizer releases the processes; this only keeps gymnasium's
        # VectorEnv.__del__ (which would call close() during interpreter shutdown) quiet
        pass

    def _is_closed(self) -> bool:
        return self._state is State.CLOSED

    def _check_open(self) -> None:
        if self._is_closed():
            self._state = State.CLOSED
            raise ClosedEnvironmentError(f"this {type(self).__name__} is closed")

    def _check_not_async(self, call: str) -> None:
        self._check_open()
        if self._state is State.ASYNC:
            raise AlreadyPendingCallError(
                f"{call}() while async steps are pending: recv() them first", call)

    def _check_async(self) -> None:
        self._check_open()
        if self._state is not State.ASYNC:
            raise NoAsyncCallError("recv() without send(): no step is in flight", "recv")

    def _check_was_reset(self, call: str) -> None:
        if self._state is State.NEEDS_RESET:
            raise ResetNeeded(f"call reset() before {call}()")

    def _check_not_ended(self, ids: np.ndarray) -> None:
        """With autoreset disabled, an env whose episode ended must be reset first."""
        if self.metadata.get("autoreset_mode") is not AutoresetMode.DISABLED:
            return
        ended = ids[self.book.ended(ids)]
        if ended.size:
            raise ResetNeeded(f"env {int(ended[0])} ended its episode and autoreset_mode is "
                              f"DISABLED: reset it first (reset(options={{'reset_mask': "
                              f"mask}}))")
