"""The kernels' definition of correct, in NumPy: the same bytes on every platform.

fastatari's observations are OpenCV's arithmetic as it runs on x86-64 (cvtColor RGB2GRAY and
INTER_AREA resize, KERNELS.md). OpenCV's own builds for other platforms round differently (its
aarch64 INTER_AREA differs from its x86 one by 1 in about 0.08% of pixels), so the tests check the
kernels against this oracle, not against the platform's OpenCV. Every float32 operation here is a
separate NumPy ufunc, rounded on its own (NumPy never fuses a multiply and an add), in OpenCV's
order. ``test_reference.py`` holds the oracle equal to OpenCV on x86-64, and measures the
platform's OpenCV against it elsewhere.
"""
from __future__ import annotations

import functools
import math
import platform
import sys

import numpy as np

#: Where the platform's OpenCV is the reference arithmetic itself.
OPENCV_IS_REFERENCE = platform.machine().lower() in ("x86_64", "amd64")

_F32 = np.float32


def rgb_to_gray(rgb: np.ndarray) -> np.ndarray:
    """cvtColor(COLOR_RGB2GRAY) for uint8 (OpenCV >= 4): 15-bit fixed-point weights."""
    r, g, b = (rgb[..., c].astype(np.uint32) for c in range(3))
    return ((9798 * r + 19235 * g + 3735 * b + 16384) >> 15).astype(np.uint8)


@functools.lru_cache(maxsize=64)
def _area_taps(ssize: int, dsize: int) -> tuple[np.ndarray, np.ndarray]:
    """computeResizeAreaTab (modules/imgproc/src/resize.cpp) in double, weights cast to float32,
    padded with weight 0 on the last real index: (dsize, taps) indices and weights."""
    scale = 1.0 / (dsize / ssize)
    rows = []
    for d in range(dsize):
        fs1 = d * scale
        fs2 = fs1 + scale
        cell = min(scale, ssize - fs1)
        s2 = min(math.floor(fs2), ssize - 1)
        s1 = min(math.ceil(fs1), s2)
        taps = []
        if s1 - fs1 > 1e-3:
            taps.append((s1 - 1, (s1 - fs1) / cell))
        taps.extend((s, 1.0 / cell) for s in range(s1, s2))
        if fs2 - s2 > 1e-3:
            taps.append((s2, min(min(fs2 - s2, 1.0), cell) / cell))
        rows.append(taps)
    width = max(len(t) for t in rows)
    index = np.array([[t[min(k, len(t) - 1)][0] for k in range(width)] for t in rows], np.intp)
    weight = np.array([[t[k][1] if k < len(t) else 0.0 for k in range(width)] for t in rows], _F32)
    return index, weight


def _round_u8(x: np.ndarray) -> np.ndarray:
    """saturate_cast<uchar>: round half to even, clamp to [0, 255]."""
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def _integer_scale(ssize: int, dsize: int) -> int | None:
    s = 1.0 / (dsize / ssize)
    return round(s) if abs(s - round(s)) < sys.float_info.epsilon else None


def resize_area(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """cv2.resize(img, size, interpolation=INTER_AREA) for a uint8 (h, w) or (h, w, cn) image
    shrunk to ``size`` = (width, height), as OpenCV computes it on x86-64."""
    dw, dh = size
    h, w = img.shape[:2]
    if (dh, dw) == (h, w):
        return img.copy()
    src = img if img.ndim == 3 else img[:, :, None]
    kx, ky = _integer_scale(w, dw), _integer_scale(h, dh)
    if kx is not None and ky is not None:
        # resizeAreaFast_: box sums; 2x2 is (sum + 2) >> 2, other boxes round sum * (1.f / area)
        sums = src[:dh * ky, :dw * kx].astype(np.int64)
        sums = sums.reshape(dh, ky, dw, kx, -1).sum(axis=(1, 3))
        if kx == ky == 2:
            out = ((sums + 2) >> 2).astype(np.uint8)
        else:
            out = _round_u8(sums.astype(_F32) * (_F32(1) / _F32(kx * ky)))
    else:
        # ResizeArea_Invoker: per source row, H = ((s0 * a0) + s1 * a1) + ... in tap order; per
        # output row, out = (b0 * H0 + b1 * H1) + ...; float32, each operation rounded.
        xi, xw = _area_taps(w, dw)
        yi, yw = _area_taps(h, dh)
        pixels = src.astype(_F32)
        hrows = pixels[:, xi[:, 0]] * xw[:, 0, None]
        for k in range(1, xi.shape[1]):
            hrows = hrows + pixels[:, xi[:, k]] * xw[:, k, None]
        acc = yw[:, 0, None, None] * hrows[yi[:, 0]]
        for k in range(1, yi.shape[1]):
            acc = acc + yw[:, k, None, None] * hrows[yi[:, k]]
        out = _round_u8(acc)
    return out if img.ndim == 3 else out[:, :, 0]
