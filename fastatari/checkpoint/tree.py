"""A state (nested dicts, lists and tuples of NumPy arrays, numbers, strings, bytes and
fastatari's snapshot records) as a JSON document plus its arrays, and back: nothing in it is
code, and only the records named here are built from it.

The document keeps the structure and every value that is not an array; each array becomes
``{"$array": key}``, ``key`` naming it in the arrays returned beside the document (a file of its
own in a checkpoint: :mod:`fastatari.checkpoint.files`). A frame store's state
(:meth:`fastatari.replay.FrameStore.state_dict`) is a dict like any other; its ``frames`` array
is an array like any other here.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from typing import Any, Callable, Dict, Tuple

import numpy as np

from fastatari.core.options import AtariOptions
from fastatari.core.snapshot import EnvSnapshot, GameState, PendingReset

__all__ = ["decode", "encode"]

#: The records a document may name, by name: fastatari's own, built field by field through
#: their constructors (which check them).
RECORDS: Dict[str, Callable[..., Any]] = {
    "AtariOptions": AtariOptions, "EnvSnapshot": EnvSnapshot, "GameState": GameState,
    "PendingReset": PendingReset,
}


def encode(state: Any) -> Tuple[Any, Dict[str, np.ndarray]]:
    """``state`` as a JSON-ready document and its arrays, by key (``TypeError`` for a value of
    another kind: an object array, a class not in :data:`RECORDS`)."""
    arrays: Dict[str, np.ndarray] = {}

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                raise TypeError(f"{path or 'the state'}: an object array cannot be saved")
            arrays[path] = value
            return {"$array": path}
        if isinstance(value, np.generic):
            return {"$scalar": value.dtype.str, "value": walk(value.item(), path)}
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, bytes):
            return {"$bytes": base64.b64encode(value).decode("ascii")}
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise TypeError(f"{path or 'the state'}: dict keys must be strings")
            if any(key.startswith("$") for key in value):
                return {"$dict": {key: walk(item, f"{path}.{key}")
                                  for key, item in value.items()}}
            return {key: walk(item, f"{path}.{key}".lstrip(".")) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            items = [walk(item, f"{path}[{i}]") for i, item in enumerate(value)]
            return items if isinstance(value, list) else {"$tuple": items}
        name = type(value).__name__
        if dataclasses.is_dataclass(value) and RECORDS.get(name) is type(value):
            return {"$record": name,
                    "fields": {f.name: walk(getattr(value, f.name), f"{path}.{f.name}")
                               for f in dataclasses.fields(value)}}
        raise TypeError(f"{path or 'the state'}: a {name} cannot be saved")

    return walk(state, ""), arrays


def decode(document: Any, arrays: Dict[str, np.ndarray]) -> Any:
    """The state :func:`encode` gave ``document`` and ``arrays`` for (``ValueError`` for a
    document it did not write)."""
    def walk(value: Any) -> Any:
        if isinstance(value, list):
            return [walk(item) for item in value]
        if not isinstance(value, dict):
            return value
        if "$array" in value:
            return arrays[value["$array"]]
        if "$scalar" in value:
            return np.dtype(value["$scalar"]).type(walk(value["value"]))
        if "$float" in value:
            return float(value["$float"])
        if "$bytes" in value:
            return base64.b64decode(value["$bytes"], validate=True)
        if "$dict" in value:
            return {key: walk(item) for key, item in value["$dict"].items()}
        if "$tuple" in value:
            return tuple(walk(item) for item in value["$tuple"])
        if "$record" in value:
            record = RECORDS.get(value["$record"])
            if record is None:
                raise ValueError(f"unknown record {value['$record']!r}")
            return record(**{key: walk(item) for key, item in value["fields"].items()})
        tags = [key for key in value if key.startswith("$")]
        if tags:
            raise ValueError(f"unknown tag {tags[0]!r}")
        return {key: walk(item) for key, item in value.items()}

    return walk(document)
