"""What a replay memory takes: how a stack of frames lies in an observation (which axis, how
many frames), and the checks of the stacks and per-env rows added; and how a torch front
hands a sample's arrays out (:func:`to_tensors`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np


def stack_layout(obs_shape: Sequence[int], frame_stack: Optional[int] = None,
                 stack_axis: Optional[int] = None) -> Tuple[int, int]:
    """``(frame_stack, stack_axis)`` for stacks of shape ``obs_shape``.

    Defaults: the stack lies along the first axis when it is no longer than the last (channels
    first, ``(4, 84, 84)``: fastatari, gymnasium's ``FrameStackObservation``, SB3 after
    ``VecTransposeImage``), else along the last (``(84, 84, 4)``: SB3's ``VecFrameStack``);
    one channel per frame. Pass ``frame_stack`` for colour stacks (``(84, 84, 12)`` is 4 RGB
    frames) and ``stack_axis=0`` for gymnasium's colour stacks ``(4, 210, 160, 3)``. A wrong
    guess costs memory, never exactness: every stored frame is checked byte for byte.
    """
    shape = tuple(int(d) for d in obs_shape)
    if len(shape) < 2:
        raise ValueError(f"fastatari.replay stores image stacks; the shape {shape} is not one")
    if stack_axis is None:
        stack_axis = 0 if shape[0] <= shape[-1] else len(shape) - 1
    if not -len(shape) <= stack_axis < len(shape):
        raise ValueError(f"stack_axis {stack_axis} is not an axis of the shape {shape}")
    length = shape[stack_axis]
    if frame_stack is None:
        frame_stack = length
    if not isinstance(frame_stack, int) or isinstance(frame_stack, bool) or frame_stack < 1 \
            or length % frame_stack:
        raise ValueError(f"frame_stack must be a positive int dividing the {length} entries of "
                         f"axis {stack_axis} of the shape {shape}, got {frame_stack!r}")
    return frame_stack, stack_axis % len(shape)


def check_stacks(name: str, array: Any, shape: Tuple[int, ...]) -> None:
    """``array`` must be a uint8 NumPy array of ``shape`` (TypeError, else ValueError)."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8:
        raise TypeError(f"{name} must be a uint8 array of shape {shape}, got "
                        f"{type(array).__name__} {getattr(array, 'dtype', '')}")
    if array.shape != shape:
        raise ValueError(f"{name} must have the shape {shape}, got {array.shape}")


def as_numbers(name: str, value: Any) -> np.ndarray:
    """``value`` as a NumPy array of bools, ints or floats; TypeError naming ``name`` for
    anything else (strings, None, objects, complex numbers)."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:  # ragged lists, objects NumPy cannot hold
        raise ValueError(f"{name} must be an array of numbers, got {value!r} ({error})") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numbers, got {array.dtype} ({_short(value)})")
    return array


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def convert(name: str, array: np.ndarray, dtype: Any) -> np.ndarray:
    """A copy of the numbers ``array`` as ``dtype``, only where nothing changes meaning
    (ValueError naming ``name`` otherwise):

    - to bool: bools, or numbers that are all 0 or 1;
    - to an integer dtype: integers, bools, or floats that are whole, all within ``dtype``'s
      range (``1.0`` is 1; ``1.5`` is refused);
    - to a float dtype: numbers that are finite and within ``dtype``'s range, rounded to its
      nearest (``1e300`` or NaN is refused for float32).
    """
    target = np.dtype(dtype)
    kind = array.dtype.kind
    if target.kind == "b":
        if kind != "b" and not np.isin(array, (0, 1)).all():
            raise ValueError(f"{name} must be booleans (or 0 and 1), got {_short(array)}")
    elif target.kind in "iu":
        if not (kind in "biu" and np.can_cast(array.dtype, target, "safe")):  # else all fit
            _check_integers(name, array, target)
    elif target.kind == "f":
        # one reduction in the common case: NaN and infinities fail the comparison too
        if array.size and kind == "f" and not np.abs(array).max() <= _float_max(target):
            if not np.isfinite(array).all():
                raise ValueError(f"{name} must be finite, got {_short(array)}")
            raise ValueError(f"{name} must be within {target}'s range (magnitude at most "
                             f"{np.finfo(target).max:.4g}), got {_short(array)}")
    else:  # (never: the memories keep numbers)
        raise TypeError(f"{name} cannot be stored as {target}")
    return np.array(array, target, copy=True, order="C")


@functools.lru_cache(maxsize=None)
def _float_max(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).max)


def _check_integers(name: str, array: np.ndarray, target: np.dtype) -> None:
    """:func:`convert`'s rule for an integer ``target``: whole numbers within its range."""
    info = np.iinfo(target)
    kind = array.dtype.kind
    if kind == "f":
        if not (np.isfinite(array).all() and (array == np.round(array)).all()):
            raise ValueError(f"{name} must be whole numbers, got {_short(array)}")
    # (floats against the float bounds [min, max + 1): exact for every integer dtype)
    low, high = (float(info.min), float(info.max) + 1) if kind == "f" else (info.min,
                                                                            info.max + 1)
    if array.size and kind in "iuf" and (array.min() < low or array.max() >= high):
        raise ValueError(f"{name} must be within {target}'s range [{info.min}, "
                         f"{info.max}], got {_short(array)}")


def check_rows(name: str, value: Any, shape: tuple, dtype: Any, *,
               broadcast: bool = False) -> np.ndarray:
    """``value`` as a new array of ``shape`` and ``dtype``, for an ``add``: every replay
    memory converts each argument of a step through here before it stores anything.
    TypeError naming ``name`` for what is not numbers (strings, None), ValueError for another
    shape (``broadcast``: one that broadcasts to it, as SB3's ``add`` allows) or values that
    :func:`convert` refuses."""
    if type(value) is np.ndarray and value.shape == shape and value.dtype == dtype \
            and value.dtype.kind in "biu":
        return value.copy()  # the common case, nothing to check: integers kept as they are
    array = as_numbers(name, value)
    if array.shape != shape:
        if not broadcast:
            raise ValueError(f"{name} must have the shape {shape}, got {array.shape}")
        try:
            array = np.broadcast_to(array, shape)
        except ValueError:
            raise ValueError(f"{name} must have the shape {shape} (or broadcast to it), got "
                             f"{array.shape}") from None
    return convert(name, array, dtype)


def state_array(name: str, value: Any, shape: tuple, dtype: Any) -> np.ndarray:
    """A state's array ``name`` as a new array of ``shape`` and ``dtype``, for a
    ``load_state_dict``: of that dtype, or one that NumPy casts to it safely
    (``np.can_cast(..., "safe")``: int32 for int64, never float for int), with the values
    :func:`convert` takes. TypeError for another dtype, ValueError for another shape."""
    array = as_numbers(f"the state's {name}", value)
    if not np.can_cast(array.dtype, dtype, "safe"):
        raise TypeError(f"the state's {name} must be {np.dtype(dtype)} (or cast to it "
                        f"safely), got {array.dtype}")
    if array.shape != shape:
        raise ValueError(f"the state's {name} must have the shape {shape}, got {array.shape}")
    return convert(f"the state's {name}", array, dtype)


def state_number(name: str, value: Any, kind: str) -> Any:
    """A state's number ``name`` (a Python or NumPy scalar, or a 0-d array as ``np.load``
    gives back): ``kind`` "i" an int, "b" a bool, "f" a finite float. TypeError otherwise."""
    array = as_numbers(f"the state's {name}", value)
    target = {"i": np.int64, "b": bool, "f": np.float64}[kind]
    if array.ndim or (array.dtype.kind == "b") != (kind == "b") \
            or not np.can_cast(array.dtype, target, "safe"):
        rule = {"i": "an int", "b": "a bool", "f": "a number"}[kind]
        raise TypeError(f"the state's {name} must be {rule}, got {_short(value)}")
    if kind == "f":
        return float(convert(f"the state's {name}", array, np.float64))
    return bool(array) if kind == "b" else int(array)


def state_keys(what: str, state: Any, keys: Sequence[str]) -> None:
    """``state`` must be a mapping (a dict, an ``np.load`` archive) holding ``keys``."""
    if not isinstance(state, Mapping):
        raise TypeError(f"{what} must be a dict (a state_dict()), got {type(state).__name__}")
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(f"{what} lacks {', '.join(map(repr, missing))}")


def flat_state(store: Any, columns: Mapping[str, np.ndarray], pieces: bool = False
               ) -> Dict[str, Any]:
    """A memory's state as one flat dict of arrays and numbers: its frame store's under
    ``"frames.<key>"`` (``pieces``: its frames as views of its chunks,
    ``FrameStore.state_dict``), then copies of its ``columns`` (``np.savez`` writes it as
    it is)."""
    state: Dict[str, Any] = {f"frames.{key}": value
                             for key, value in store.state_dict(pieces).items()}
    state.update({name: array.copy() for name, array in columns.items()})
    return state


def load_flat_state(what: str, state: Any, store: Any, columns: Mapping[str, np.ndarray]
                    ) -> None:
    """Take a :func:`flat_state` (a dict, or the archive ``np.load`` opens; the frames flat,
    or nested under ``"frames"``) into ``store`` and ``columns``, checked whole (every key,
    dtype, shape and range, and that every frame referred to is held) before anything
    changes."""
    state_keys(what, state, tuple(columns))
    if "frames" in state:
        frames = state["frames"]
        if isinstance(frames, np.ndarray) and frames.dtype == object and not frames.ndim:
            frames = frames.item()  # (a nested state through np.savez)
    else:
        frames = {key[len("frames."):]: state[key] for key in state
                  if key.startswith("frames.")}
    checked = store.checked_state(frames)
    values = {name: state_array(name, state[name], array.shape, array.dtype)
              for name, array in columns.items()}
    store.load_checked(checked)
    for name, array in columns.items():
        array[...] = values[name]


def draw_integers(rng: Any, high: int, size: int) -> np.ndarray:
    """``size`` ints in ``[0, high)`` from ``rng``: a NumPy ``Generator`` (``integers``), a
    legacy ``RandomState`` (``randint``), or None (a fresh ``default_rng()``)."""
    if rng is None:
        rng = np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng.integers(0, high, size)
    if isinstance(rng, np.random.RandomState):
        return rng.randint(0, high, size).astype(np.int64, copy=False)
    raise TypeError(f"rng must be a numpy Generator (np.random.default_rng()), a RandomState "
                    f"or None, got {type(rng).__name__}")


def to_tensors(arrays: Sequence[np.ndarray], device: Any) -> List[Any]:
    """A sample's own ``arrays`` as torch tensors on ``device``: sharing their memory
    (``from_numpy``: a third of the cost of ``as_tensor``), moved only off the CPU (``to``
    costs even where it moves nothing)."""
    import torch

    tensors = [torch.from_numpy(a) for a in arrays]
    if torch.device(device).type == "cpu":
        return tensors
    return [tensor.to(device) for tensor in tensors]
