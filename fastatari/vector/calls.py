"""gymnasium's vector-env call contract, shared by the local vector env and the Ray one: the
call order as an explicit state with gymnasium's exceptions, and one caller at a time."""

from __future__ import annotations

import enum
import functools
from typing import TYPE_CHECKING, Any, Callable, Dict, TypeVar, cast

import numpy as np
from gymnasium.error import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    NoAsyncCallError,
    ResetNeeded,
)
from gymnasium.vector import AutoresetMode

from fastatari.vector._step import CallGuard

if TYPE_CHECKING:
    from fastatari.vector._book import EnvBook

__all__ = ["CallOrder", "ConcurrentCallError", "State", "one_caller"]

F = TypeVar("F", bound=Callable[..., Any])


class ConcurrentCallError(RuntimeError):
    """A call made while another thread's call on the same env is running."""


def one_caller(method: F, call: str = "") -> F:
    """Refuse a call while another thread's call on the same env runs.

    A vector env serves one thread at a time, as gymnasium's do; two threads inside it would
    mix their commands in the workers' shared memory. Instead of mixed results or a hang, the
    second caller gets :class:`ConcurrentCallError` at once and the first call goes on
    untouched. The same thread may re-enter (a ``close()`` from a signal handler). The guard
    is the env's ``_caller`` (:class:`~fastatari.vector._step.CallGuard`), which the compiled
    step enters itself. ``call``: the call's name in the errors (default: the
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
        ended = ids[self.book.ended_of(ids)]
        if ended.size:
            raise ResetNeeded(f"env {int(ended[0])} ended its episode and autoreset_mode is "
                              f"DISABLED: reset it first (reset(options={{'reset_mask': "
                              f"mask}}))")
