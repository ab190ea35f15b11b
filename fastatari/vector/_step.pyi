from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

NOT_COMMON: int
ALL_STEP: int
SOME_RESET: int

class SyncStep:
    ops: np.ndarray
    def __init__(self, buffers: Any, ended: np.ndarray, restarted: np.ndarray,
                 field_names: Sequence[str], game_key: str, game_fields: Sequence[str],
                 game_index: Optional[np.ndarray], num_actions: int, copy: bool,
                 life_loss_info: bool, autoreset: str) -> None: ...
    def write_actions(self, actions: Any) -> int: ...
    def results(self) -> Optional[Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                        Dict[str, Any]]]: ...
