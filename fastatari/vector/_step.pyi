from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

NOT_COMMON: int
ALL_STEP: int
SOME_RESET: int

class CallGuard:
    call: str
    def enter(self, call: str) -> int: ...
    def leave(self) -> None: ...

class CommonStep:
    ops: np.ndarray
    output: int
    in_flight: int
    def __init__(self, buffers: Any, ended: np.ndarray, restarted: np.ndarray,
                 phase: np.ndarray, field_names: Sequence[str], game_key: str,
                 game_fields: Sequence[str],
                 game_index: Optional[np.ndarray], num_actions: int, copy: bool,
                 life_loss_info: bool, same_step: bool, next_step: bool,
                 executor: Any, batch_size: int = 0) -> None: ...
    def step(self, actions: Any) -> Union[
        Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]], List[Any], None]: ...
    def send(self, actions: Any, env_ids: Any) -> bool: ...
    def recv(self) -> Union[
        Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]], List[Any], None]: ...
    def write_actions(self, actions: Any) -> int: ...
    def write_send(self, actions: Any, env_ids: Any) -> Optional[np.ndarray]: ...
    def results(self, ids: Optional[np.ndarray] = None) -> Optional[
        Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]]: ...
