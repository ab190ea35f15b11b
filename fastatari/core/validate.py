"""Argument checks shared by every front end: one rule per kind of value, one message style.

:class:`~fastatari.AtariOptions`, the single and vector envs (local and on Ray) and
``fastatari.envpool.make`` all validate through these functions, so a value is accepted or
refused the same way, with the same words, wherever it is given. Arrays and seeds follow numpy
and gymnasium: a value of the wrong type raises ``TypeError``, one of the right type out of
range ``ValueError``. Options
(``check_int``, ``check_bool``, ``check_probability``, ``check_timeout``) raise ``ValueError``
for any bad value, as ``AtariOptions`` always has: they come from keyword arguments, files and
command lines, where "a bad value" is what the user did.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any, List, Optional, Sequence

import numpy as np

__all__ = ["is_int", "check_int", "check_bool", "check_probability", "check_timeout",
           "check_fits_in_memory", "physical_memory",
           "check_seed", "check_seeds", "check_actions", "check_env_ids"]

#: Seeds ale-py's ``AtariEnv.seed`` accepts (``np.random.SeedSequence`` entropy, non-negative).
SEED_RULE = "a non-negative int or None"


def is_int(value: Any) -> bool:
    """A true integer (Python or NumPy), never a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, minimum: int, maximum: Optional[int] = None) -> int:
    """``value`` as an int in ``[minimum, maximum]``; ``ValueError`` naming ``name`` otherwise.

    ValueError (not TypeError) for a non-int too: option values arrive from keyword arguments,
    configuration files and command lines, where "a bad value" is what the user did.
    """
    within = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
    if not is_int(value) or value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an int {within}, got {value!r}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` as a bool; Python and NumPy bools only (``copy="no"`` or ``1`` is refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")
    return bool(value)


def check_probability(name: str, value: Any) -> float:
    """``value`` as a float in [0, 1]."""
    if (not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_))
            or not 0.0 <= float(value) <= 1.0):
        raise ValueError(f"{name} must be a float in [0, 1], got {value!r}")
    return float(value)


#: The shortest deadline a call may have: below it, a healthy worker that a busy machine
#: leaves unscheduled for a moment would be killed as hung.
MIN_TIMEOUT = 1.0


def check_timeout(name: str, value: Any) -> Optional[float]:
    """``None`` (wait forever) or a finite number of seconds, at least :data:`MIN_TIMEOUT`."""
    if value is None:
        return None
    rule = (f"{name} must be None (wait forever) or a finite number of seconds >= "
            f"{MIN_TIMEOUT:g}")
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{rule}, got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int past a float's range
        raise ValueError(f"{rule}, got an int of {len(str(value))} digits") from None
    if not math.isfinite(seconds) or seconds < MIN_TIMEOUT:
        raise ValueError(f"{rule}, got {value!r}")
    return seconds


def physical_memory() -> Optional[int]:
    """This machine's memory in bytes, or None where the platform does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_fits_in_memory(what: str, nbytes: int) -> None:
    """``MemoryError`` naming ``what`` (the options that ask for it) before ``nbytes`` bytes
    that could never fit in this machine's memory are asked for."""
    memory = physical_memory()
    if memory is not None and nbytes > memory:
        raise MemoryError(f"{what} need {_size(nbytes)}, more than this machine's memory "
                          f"({_size(memory)})")


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    raise AssertionError


def check_seed(value: Any, name: str = "seed") -> Optional[int]:
    """One env's seed: a non-negative int or None (what ale-py's Atari env accepts)."""
    if value is None:
        return None
    if not is_int(value):
        raise TypeError(f"{name} must be {SEED_RULE}, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be {SEED_RULE}, got {value!r}")
    return int(value)


def check_seeds(seed: Any, count: int) -> List[Optional[int]]:
    """One seed per env: ``None`` (continue), an int (env ``i`` gets ``seed + i``) or a
    sequence of ``count`` seeds, each checked by :func:`check_seed`."""
    if seed is None:
        return [None] * count
    if isinstance(seed, np.ndarray) and seed.ndim == 0:
        seed = seed.item()
    if is_int(seed):
        check_seed(seed)
        return [int(seed) + i for i in range(count)]
    if isinstance(seed, (str, bytes)) or not isinstance(seed, (Sequence, np.ndarray)):
        raise TypeError(f"seed must be None, an int or a sequence of {count} seeds, "
                        f"got {seed!r}")
    seeds = list(seed)
    if len(seeds) != count:
        raise ValueError(f"seed must have one entry per env ({count}), got {len(seeds)}")
    return [check_seed(s, f"seed[{i}]") for i, s in enumerate(seeds)]


def _int_array(name: str, values: Any) -> np.ndarray:
    """``values`` as an array; an empty list is an empty int array (not float64), a ragged or
    non-numeric one a ``TypeError`` naming ``name``."""
    if isinstance(values, (list, tuple)) and not values:
        return np.zeros(0, np.int64)
    try:
        return np.asarray(values)
    except (ValueError, TypeError) as e:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of ints: {e}") from None


def check_actions(actions: Any, count: int, num_actions: int) -> np.ndarray:
    """Actions of ``count`` envs in ``Discrete(num_actions)``, as int64.

    ``TypeError`` for a non-array or a non-integer dtype (gymnasium's vector envs raise it for
    ``step(0)``), ``ValueError`` for a wrong shape or an action out of range.
    """
    array = _int_array("actions", actions)
    if actions is None or array.ndim == 0:
        raise TypeError(f"actions must be an array of {count} ints, got {actions!r}")
    if array.dtype == bool or array.dtype.kind not in "iu":
        raise TypeError(f"actions must be integers, got dtype {array.dtype}")
    if array.shape != (count,):
        raise ValueError(f"actions must have shape ({count},), got {array.shape}")
    bad = (array < 0) | (array >= num_actions)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"actions must be in [0, {num_actions}) (Discrete({num_actions})); "
                         f"actions[{j}] = {array[j]}")
    return array.astype(np.int64, copy=False)


def check_env_ids(env_ids: Any, num_envs: int) -> np.ndarray:
    """Env ids: ``None`` (all), one int, or a non-empty 1-d array of distinct ints in range."""
    if env_ids is None:
        return np.arange(num_envs)
    ids = _int_array("env_ids", env_ids)
    if ids.ndim == 0 and is_int(env_ids):
        ids = ids.reshape(1)
    if ids.dtype == bool or ids.dtype.kind not in "iu" or ids.ndim != 1:
        raise TypeError(f"env_ids must be an int or a 1-d array of ints, got {env_ids!r}")
    if ids.size == 0:
        raise ValueError("env_ids must name at least one env")
    if (ids < 0).any() or (ids >= num_envs).any():
        raise ValueError(f"env_ids must be in [0, {num_envs}), got {env_ids!r}")
    if np.unique(ids).size != ids.size:
        raise ValueError(f"env_ids must not repeat, got {env_ids!r}")
    return ids.astype(np.int64)
