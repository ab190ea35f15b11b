"""The compiled kernels: exact, fused replacements for the OpenCV/numpy Atari pipeline.

The bottom layer, in three parts: these public names; ``_kernels`` (a thin Cython layer that
checks every argument, then runs the C without the GIL; ``_kernels.pyi`` its stubs), over
``_csrc.pxd``'s declarations of the plain C99 in the repository's ``csrc/``.
"""
from fastatari.kernels._kernels import (
    all_known,
    resize_area,
    rgb_to_gray,
    set_simd_path,
    simd_available,
    simd_path,
    step_palette,
    step_rgb,
)

__all__ = [
    "all_known",
    "resize_area",
    "rgb_to_gray",
    "set_simd_path",
    "simd_available",
    "simd_path",
    "step_palette",
    "step_rgb",
]
