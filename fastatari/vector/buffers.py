"""One shared-memory block holding every per-env array the workers write and the trainer reads."""

from __future__ import annotations

from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Dict, Tuple

import numpy as np

# name -> (dtype, per-env shape); the observation arrays get the stack's shape at run time.
_SCALARS: Dict[str, Tuple[str, Tuple[int, ...]]] = {
    "action": ("int64", ()),
    "reward": ("float64", ()),
    "terminated": ("bool", ()),
    "truncated": ("bool", ()),
    "lives": ("int32", ()),
    "raw_reward": ("float64", ()),
    "game_over": ("bool", ()),
    "frame_number": ("int64", ()),
    "episode_frame_number": ("int64", ()),
    "episode_done": ("bool", ()),  # this step ended a game: episode_* hold its statistics
    "episode_r": ("float64", ()),
    "episode_l": ("int64", ()),
    "episode_t": ("float64", ()),
    "has_final": ("bool", ()),  # same-step autoreset: final_* hold the ended episode's step
    "final_lives": ("int32", ()),
    "wake": ("int64", ()),  # at each worker's first env: bumped by the trainer per command
}


@dataclass(frozen=True)
class Layout:
    """Where each array lives in the block: picklable, so workers can map the same views."""

    num_envs: int
    obs_shape: Tuple[int, ...]

    def fields(self) -> Dict[str, Tuple[str, Tuple[int, ...]]]:
        fields = {"obs": ("uint8", self.obs_shape), "final_obs": ("uint8", self.obs_shape)}
        fields.update(_SCALARS)
        return fields

    def offsets(self) -> Dict[str, Tuple[int, np.dtype, Tuple[int, ...]]]:
        out, offset = {}, 0
        for name, (dtype, shape) in self.fields().items():
            dt = np.dtype(dtype)
            offset = (offset + 63) // 64 * 64  # cache-line aligned arrays
            full = (self.num_envs,) + shape
            out[name] = (offset, dt, full)
            offset += int(np.prod(full, dtype=np.int64)) * dt.itemsize
        return out

    @property
    def nbytes(self) -> int:
        last = list(self.offsets().values())[-1]
        return max(1, last[0] + int(np.prod(last[2], dtype=np.int64)) * last[1].itemsize)


class SharedBuffers:
    """Numpy views over one ``multiprocessing.shared_memory`` block.

    The trainer creates it (``create=True``) and alone unlinks it; workers attach by name.
    """

    def __init__(self, layout: Layout, name: str | None = None, create: bool = False) -> None:
        self.layout = layout
        if create:
            self.shm = shared_memory.SharedMemory(create=True, size=layout.nbytes)
        else:
            self.shm = shared_memory.SharedMemory(name=name)
        self.name = self.shm.name
        self.arrays: Dict[str, np.ndarray] = {}
        for field, (offset, dtype, shape) in layout.offsets().items():
            array = np.ndarray(shape, dtype, buffer=self.shm.buf, offset=offset)
            self.arrays[field] = array
            setattr(self, field, array)  # plain attributes: workers read them per env and step
        self._owner = create

    def close(self) -> None:
        """Drop the views and unmap; the creator also unlinks the block."""
        if not self.arrays:
            return
        for field in self.arrays:
            delattr(self, field)
        self.arrays = {}
        try:
            self.shm.close()
        except BufferError:
            pass  # the caller still holds views (copy=False): the mapping lives until they go
        finally:
            if self._owner:
                try:
                    self.shm.unlink()
                except FileNotFoundError:
                    pass
