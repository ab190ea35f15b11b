"""The vector env's own keywords, declared once: names, defaults, checks.

:class:`~fastatari.AtariOptions` declares the preprocessing options; :class:`VectorConfig`
declares how the front runs the envs (batches, autoreset, copies, faults), checked in the plan
(:func:`~fastatari.vector.plan.plan_vec`); :class:`WorkerSettings` the local worker processes
(how many, which cores, how envs are shared out), checked where they are used: by the local
executor (:class:`~fastatari.vector.pool.WorkerPool`), on each Ray actor's node. A new keyword
is one field here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

from gymnasium.vector import AutoresetMode

from fastatari.core import validate
from fastatari.vector.placement import resolve_cpus, usable_cores
from fastatari.vector.resets import autoreset_mode as autoreset_mode_of

__all__ = ["DEFAULT_TIMEOUT", "VECTOR_KEYWORDS", "VectorConfig", "WorkerSettings",
           "split_keywords"]

#: Default ``timeout``: long enough for a worker to reload many ROMs in one reset, short
#: enough that a hung worker is replaced within a couple of minutes.
DEFAULT_TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True)
class VectorConfig:
    """How a vector env's front runs its envs (see :class:`~fastatari.AtariVectorEnv` for
    each), whatever executes them.

    Build it with :meth:`checked`, which validates every value (``ValueError``) and resolves
    the defaults that depend on ``num_envs``; the fields then hold checked values.
    """

    batch_size: Optional[int] = None  # default: num_envs
    autoreset_mode: Any = "next_step"  # checked: an AutoresetMode
    copy: bool = True
    timeout: Optional[float] = DEFAULT_TIMEOUT
    max_crashes_without_progress: int = 3
    max_restarts: Optional[int] = None
    render_mode: Optional[str] = None

    @classmethod
    def checked(cls, num_envs: int, **values: Any) -> "VectorConfig":
        """The config of a vector env of ``num_envs`` envs, every value checked."""
        given = cls(**values)
        batch_size = validate.check_int(
            "batch_size", num_envs if given.batch_size is None else given.batch_size, 1,
            num_envs)
        max_restarts = given.max_restarts
        if max_restarts is not None:
            max_restarts = validate.check_int("max_restarts", max_restarts, 0)
        if given.render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got "
                             f"{given.render_mode!r}")
        return dataclasses.replace(
            given, batch_size=batch_size,
            autoreset_mode=autoreset_mode_of(given.autoreset_mode),
            copy=validate.check_bool("copy", given.copy),
            timeout=validate.check_timeout("timeout", given.timeout),
            max_crashes_without_progress=validate.check_int(
                "max_crashes_without_progress", given.max_crashes_without_progress, 1),
            max_restarts=max_restarts)

    @property
    def same_step(self) -> bool:
        return self.autoreset_mode == AutoresetMode.SAME_STEP

    @property
    def next_step(self) -> bool:
        return self.autoreset_mode == AutoresetMode.NEXT_STEP


@dataclasses.dataclass(frozen=True)
class WorkerSettings:
    """The local worker processes of a vector env (see :class:`~fastatari.AtariVectorEnv`).

    A plan carries them as given; :meth:`checked` validates them where the workers start (on a
    Ray actor's node, its cores are the default).
    """

    num_workers: Optional[int] = None  # default: usable cores, at most num_envs
    cpus: Any = None  # "auto" or a list of CPUs; checked: one CPU per worker, or None
    balance: bool = True

    @classmethod
    def checked(cls, num_envs: int, **values: Any) -> "WorkerSettings":
        """The settings of workers running ``num_envs`` envs, every value checked."""
        given = cls(**values)
        num_workers = given.num_workers
        if num_workers is None:
            num_workers = max(1, min(usable_cores(), num_envs))
        num_workers = validate.check_int("num_workers", num_workers, 1, num_envs)
        return cls(num_workers, resolve_cpus(given.cpus, num_workers),
                   validate.check_bool("balance", given.balance))


_FRONT_KEYWORDS = tuple(f.name for f in dataclasses.fields(VectorConfig))
_WORKER_KEYWORDS = tuple(f.name for f in dataclasses.fields(WorkerSettings))
#: The keyword names :class:`VectorConfig` and :class:`WorkerSettings` declare.
VECTOR_KEYWORDS: Tuple[str, ...] = _FRONT_KEYWORDS + _WORKER_KEYWORDS


def split_keywords(keywords: Dict[str, Any]
                   ) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, Any]]:
    """``(front keywords, worker keywords, the rest)``: the rest are
    :class:`~fastatari.AtariOptions` fields (checked, with their own errors, by the options)."""
    front = {key: value for key, value in keywords.items() if key in _FRONT_KEYWORDS}
    workers = {key: value for key, value in keywords.items() if key in _WORKER_KEYWORDS}
    rest = {key: value for key, value in keywords.items() if key not in VECTOR_KEYWORDS}
    return front, workers, rest

