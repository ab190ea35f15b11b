"""The vector env's own keywords, declared once: names, defaults, checks.

:class:`~fastatari.AtariOptions` declares the preprocessing options; :class:`VectorConfig`
declares how the envs are run (workers, batches, autoreset, copies, faults). Every front end
(``fastatari.make_vec``, ``fastatari.ray``, ``fastatari.sb3``, ``fastatari.envpool``) splits
its keywords with :func:`split_keywords` and passes the vector ones on by name, so a new
keyword is one field here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Tuple

from gymnasium.vector import AutoresetMode

from fastatari.core import validate
from fastatari.vector.contract import autoreset_mode as autoreset_mode_of
from fastatari.vector.placement import resolve_cpus, usable_cores

__all__ = ["DEFAULT_TIMEOUT", "VECTOR_KEYWORDS", "VectorConfig", "split_keywords"]

#: Default ``timeout``: long enough for a worker to reload many ROMs in one reset, short
#: enough that a hung worker is replaced within a couple of minutes.
DEFAULT_TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True)
class VectorConfig:
    """How a vector env runs its envs (see :class:`~fastatari.AtariVectorEnv` for each).

    Build it with :meth:`checked`, which validates every value (``ValueError``) and resolves
    the defaults that depend on ``num_envs``; the fields then hold checked values.
    """

    num_workers: Optional[int] = None  # default: usable cores, at most num_envs
    batch_size: Optional[int] = None  # default: num_envs
    autoreset_mode: Any = "next_step"  # checked: an AutoresetMode
    copy: bool = True
    timeout: Optional[float] = DEFAULT_TIMEOUT
    max_crashes_without_progress: int = 3
    max_restarts: Optional[int] = None
    cpus: Any = None  # "auto" or a list of CPUs; checked: one CPU per worker, or None
    balance: bool = True
    render_mode: Optional[str] = None

    @classmethod
    def checked(cls, num_envs: int, **values: Any) -> "VectorConfig":
        """The config of a vector env of ``num_envs`` envs, every value checked."""
        given = cls(**values)
        num_workers = given.num_workers
        if num_workers is None:
            num_workers = max(1, min(usable_cores(), num_envs))
        num_workers = validate.check_int("num_workers", num_workers, 1, num_envs)
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
            given, num_workers=num_workers, batch_size=batch_size,
            autoreset_mode=autoreset_mode_of(given.autoreset_mode),
            copy=validate.check_bool("copy", given.copy),
            timeout=validate.check_timeout("timeout", given.timeout),
            max_crashes_without_progress=validate.check_int(
                "max_crashes_without_progress", given.max_crashes_without_progress, 1),
            max_restarts=max_restarts, cpus=resolve_cpus(given.cpus, num_workers),
            balance=validate.check_bool("balance", given.balance))

    @property
    def same_step(self) -> bool:
        return self.autoreset_mode == AutoresetMode.SAME_STEP

    @property
    def next_step(self) -> bool:
        return self.autoreset_mode == AutoresetMode.NEXT_STEP


#: The keyword names :class:`VectorConfig` declares.
VECTOR_KEYWORDS: Tuple[str, ...] = tuple(f.name for f in dataclasses.fields(VectorConfig))


def split_keywords(keywords: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``(vector keywords, the rest)``: the rest are :class:`~fastatari.AtariOptions` fields
    (checked, with their own errors, by the options)."""
    vector = {key: value for key, value in keywords.items() if key in VECTOR_KEYWORDS}
    rest = {key: value for key, value in keywords.items() if key not in VECTOR_KEYWORDS}
    return vector, rest

