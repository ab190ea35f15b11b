"""The reset options of gymnasium's vector envs: the autoreset modes' names and the
``reset_mask`` option's checks, shared by the local vector env and the Ray one."""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
from gymnasium.vector import AutoresetMode

__all__ = ["autoreset_mode", "reset_mask"]

# gymnasium's enum, its values ("NextStep", ...) and fastatari's snake-case names
_AUTORESET_MODES = {key: mode for mode in AutoresetMode
                    for key in (mode, mode.value, mode.name.lower())}


def autoreset_mode(value: Any) -> AutoresetMode:
    mode = _AUTORESET_MODES.get(value) if isinstance(value, (str, AutoresetMode)) else None
    if mode is None:
        raise ValueError(f"autoreset_mode must be 'next_step', 'same_step' or 'disabled' (or "
                         f"gymnasium's AutoresetMode), got {value!r}")
    return mode


def reset_mask(options: Optional[Dict[str, Any]], num_envs: int,
               first_reset: bool) -> Optional[np.ndarray]:
    """``options["reset_mask"]`` checked as gymnasium's vector envs check it (TypeError for a
    non-bool array, ValueError for a wrong shape or no env); None when it selects every env.
    ``options`` itself is None or a dict, as gymnasium's ``reset`` takes it (TypeError)."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict (or None), got {type(options).__name__}")
    if "reset_mask" not in options:
        return None
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
        raise TypeError(f"reset_mask must be a numpy bool array, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.shape != (num_envs,):
        raise ValueError(f"reset_mask must have shape ({num_envs},), got {mask.shape}")
    if not mask.any():
        raise ValueError("reset_mask selects no env")
    if first_reset and not mask.all():
        raise ValueError("the first reset() must reset every env (no reset_mask)")
    return None if mask.all() else mask
