from typing import Any, Dict, Optional, Tuple

import numpy as np
import numpy.typing as npt

CHUNK: int
SPARES: int

class FrameStore:
    capacity: int
    n_envs: int
    stack: int
    pos: int
    next_serial: int
    full: bool
    obs_shape: Tuple[int, ...]
    axis: int
    def __init__(self, capacity: int, n_envs: int, obs_shape: Tuple[int, ...], stack: int,
                 axis: int) -> None: ...
    def oldest_needed(self, next_put: bool = False) -> int: ...
    def put(self, obs: npt.NDArray[np.uint8], next_obs: npt.NDArray[np.uint8]) -> None: ...
    def reset(self) -> None: ...
    @property
    def size(self) -> int: ...
    def gather(self, slots: npt.ArrayLike, envs: npt.ArrayLike,
               out_obs: Optional[npt.NDArray[np.uint8]] = None,
               out_next: Optional[npt.NDArray[np.uint8]] = None
               ) -> Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]: ...
    @property
    def frames_stored(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def state_dict(self) -> Dict[str, Any]: ...
    def load_state_dict(self, state: Dict[str, Any]) -> None: ...
