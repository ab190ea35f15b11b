import numpy as np
import numpy.typing as npt

def wait_change(words: npt.NDArray[np.int64], index: int, seen: int, seconds: float) -> bool: ...
