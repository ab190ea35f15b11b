"""Twin memories: one that a test feeds bad calls to, one that sees only the good ones; after
every refusal the two must be equal, field by field."""

from __future__ import annotations

from typing import Any

import numpy as np


def state_of(memory: Any) -> Any:
    """Everything a memory holds, as nested dicts, lists and arrays."""
    if hasattr(memory, "state_dict"):
        return memory.state_dict()
    # SB3's ReplayBuffer: its arrays and the frame store
    return {"frames": memory.frames.state_dict(), "pos": memory.pos, "full": memory.full,
            **{name: getattr(memory, name) for name in ("actions", "rewards", "dones",
                                                        "timeouts")}}


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """``a`` and ``b`` (memories, or what :func:`state_of` gives) are equal, dtypes too."""
    if not isinstance(a, (dict, list, tuple, np.ndarray, int, float, bool, np.generic)):
        a, b = state_of(a), state_of(b)
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            if key.endswith("lineage"):  # where frames came from (a token per store), not them
                continue
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == np.asarray(b).dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where
