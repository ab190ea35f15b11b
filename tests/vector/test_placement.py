"""fastatari.vector.placement: the usable cores and ``cpus=`` resolved to one CPU per worker,
each refused value with the exception type the module documents and a message naming it."""
from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import pytest

from fastatari.vector import placement
from fastatari.vector.host import HOST
from fastatari.vector.placement import resolve_cpus, usable_cores

linux_affinity = pytest.mark.skipif(not HOST.affinity,
                                    reason="CPU pinning needs Linux (os.sched_setaffinity)")


def test_usable_cores_is_positive():
    assert usable_cores() >= 1
    if sys.platform == "linux":
        assert usable_cores() == len(os.sched_getaffinity(0))


@linux_affinity
@pytest.mark.parametrize("num_workers", [1, 3, 8])
def test_resolve_cpus_none_does_not_pin(num_workers):
    assert resolve_cpus(None, num_workers) is None


@linux_affinity
@pytest.mark.parametrize("num_workers", [1, 3, 8])
def test_resolve_cpus_auto_wraps_around_the_usable_cpus(num_workers):
    allowed = sorted(os.sched_getaffinity(0))
    got = resolve_cpus("auto", num_workers)
    assert got == [allowed[k % len(allowed)] for k in range(num_workers)]


@linux_affinity
def test_resolve_cpus_list_wraps_around():
    allowed = sorted(os.sched_getaffinity(0))
    first = allowed[0]
    assert resolve_cpus([first], 3) == [first, first, first]
    assert resolve_cpus((np.int64(first),), 2) == [first, first]
    assert all(type(c) is int for c in resolve_cpus([np.int64(first)], 2))
    assert resolve_cpus(allowed, 2 * len(allowed)) == allowed + allowed


@linux_affinity
@pytest.mark.parametrize("cpus", [[-1], [10**6], [0.0], [True], ["0"], [None]])
def test_resolve_cpus_refuses_ids_this_process_may_not_use(cpus):
    with pytest.raises(ValueError, match=r"^cpus must name CPUs this process may use \(\["):
        resolve_cpus(cpus, 2)


@linux_affinity
@pytest.mark.parametrize("cpus", ["all", "", 0, 1.5, True, [], (), {0}, np.array([0])])
def test_resolve_cpus_refuses_wrong_types_with_value_error(cpus):
    with pytest.raises(ValueError, match="^cpus must be None, 'auto' or a "):
        resolve_cpus(cpus, 2)


@pytest.mark.parametrize("cpus", ["auto", [0]])
def test_without_pinning_cpus_are_refused_and_none_is_not(monkeypatch, cpus):
    """macOS and Windows (FASTATARI_PLATFORM_PATHS forces their way here): no pinning."""
    monkeypatch.setattr(placement, "HOST", dataclasses.replace(HOST, affinity=False))
    assert resolve_cpus(None, 2) is None
    with pytest.raises(ValueError, match=r"^cpus= needs Linux \(os.sched_setaffinity\)"):
        resolve_cpus(cpus, 2)
