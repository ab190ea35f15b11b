"""The compiled kernels: exact, fused replacements for the OpenCV/numpy Atari pipeline."""
from fastatari._kernels import (
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
