"""Where worker processes run: the cores this process may use, and CPU pinning."""

from __future__ import annotations

import os
from typing import Any, List, Optional

from fastatari.core.validate import is_int
from fastatari.vector.host import HOST

__all__ = ["resolve_cpus", "usable_cores"]


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask on Linux, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_cpus(cpus: Any, num_workers: int) -> Optional[List[int]]:
    """The CPU of each worker for ``cpus=``: None (no pinning), ``"auto"`` (the usable CPUs in
    order, worker ``k`` on the ``k``-th, wrapping around) or a list of CPU ids (worker ``k`` on
    ``cpus[k % len(cpus)]``). Like EnvPool's ``thread_affinity_offset``, for one process per
    core; ``ValueError`` for ids this process may not use."""
    if cpus is None:
        return None
    if not HOST.affinity:
        raise ValueError("cpus= needs Linux (os.sched_setaffinity); leave it None here")
    allowed = sorted(os.sched_getaffinity(0))
    if isinstance(cpus, str):
        if cpus != "auto":
            raise ValueError(f"cpus must be None, 'auto' or a list of CPU ids, got {cpus!r}")
        return [allowed[k % len(allowed)] for k in range(num_workers)]
    if not isinstance(cpus, (list, tuple, range)) or not cpus:
        raise ValueError(f"cpus must be None, 'auto' or a non-empty list of CPU ids, "
                         f"got {cpus!r}")
    bad = [c for c in cpus if not is_int(c) or c not in allowed]
    if bad:
        raise ValueError(f"cpus must name CPUs this process may use ({allowed}), got {bad}")
    return [int(cpus[k % len(cpus)]) for k in range(num_workers)]
