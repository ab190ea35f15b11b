"""Palette look-up tables learned from ALE itself, exactly.

ALE's ``getScreenGrayscale`` and ``getScreenRGB`` are pure per-pixel functions of the palette
index that ``getScreen`` returns. Rather than copying ALE's palette tables, fastatari learns
them lazily: whenever a screen contains an index not seen yet, it asks ALE for the gray and RGB
versions of that same screen and records the mapping. After the first few frames of a game every
index is known and the check costs a fraction of a microsecond. Tables are cached per ROM and
shared by every env of that ROM in the process.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from fastatari import kernels

__all__ = ["Palette", "palette_for"]


class Palette:
    """The palette -> gray and palette -> RGB tables of one ROM, filled in as indices appear.

    Attributes
    ----------
    gray : ndarray, uint8, shape (256,)
    rgb : ndarray, uint8, shape (256, 3)
    known : ndarray, uint8, shape (256,)
        Nonzero where ``gray`` and ``rgb`` hold ALE's value for that index.
    """

    __slots__ = ("gray", "rgb", "known")

    def __init__(self) -> None:
        self.gray = np.zeros(256, np.uint8)
        self.rgb = np.zeros((256, 3), np.uint8)
        self.known = np.zeros(256, np.uint8)

    def learn(self, ale, screen: np.ndarray) -> None:
        """Make sure every index of ``screen`` is known.

        ``screen`` must be ALE's *current* screen, as ``ale.getScreen`` just filled it: on a
        miss, the gray and RGB versions of the current screen are read from ALE.
        """
        if kernels.all_known(screen, self.known):
            return
        idx = screen.reshape(-1)
        self.gray[idx] = ale.getScreenGrayscale().reshape(-1)
        self.rgb[idx] = ale.getScreenRGB().reshape(-1, 3)
        self.known[idx] = 1

    def table(self, grayscale: bool) -> np.ndarray:
        """The gray ``(256,)`` or RGB ``(256, 3)`` table."""
        return self.gray if grayscale else self.rgb


_CACHE: Dict[object, Palette] = {}


def palette_for(key: object) -> Palette:
    """The shared :class:`Palette` for ``key`` (a ROM id), created on first use.

    Parameters
    ----------
    key : hashable
        Identifies the ROM; envs of the same ROM share one table. ``None`` gives a private table.
    """
    if key is None:
        return Palette()
    pal = _CACHE.get(key)
    if pal is None:
        pal = _CACHE[key] = Palette()
    return pal
