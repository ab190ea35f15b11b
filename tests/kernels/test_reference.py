"""The oracle the kernel tests use is OpenCV's arithmetic: equal to OpenCV on x86-64, and where
the platform's OpenCV rounds differently (aarch64), the difference is measured and reported."""
from __future__ import annotations

import warnings

import cv2
import numpy as np
import pytest
from hypothesis import given, settings

from .reference import OPENCV_IS_REFERENCE, resize_area, rgb_to_gray
from .test_kernels import SIZES, shrinks


def opencv_area(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The platform's own INTER_AREA (not the session's stand-in: conftest.py)."""
    resize = getattr(cv2.resize, "__wrapped__", cv2.resize)
    return resize(img, size, interpolation=cv2.INTER_AREA)


def compare_with_platform_opencv(ours: np.ndarray, opencv: np.ndarray, what: str) -> None:
    """Equal on x86-64; elsewhere at most 1 apart, with a warning that says how many differ."""
    assert ours.shape == opencv.shape, what
    if OPENCV_IS_REFERENCE:
        assert np.array_equal(ours, opencv), what
        return
    diff = np.abs(ours.astype(np.int16) - opencv)
    assert diff.max(initial=0) <= 1, what
    if diff.any():
        warnings.warn(f"{what}: this platform's OpenCV differs from the x86-64 reference in "
                      f"{np.count_nonzero(diff)} of {diff.size} values (by 1)", stacklevel=2)


def test_gray_all_triples():
    v = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], axis=-1).astype(np.uint8)
    rgb = rgb.reshape(4096, 4096, 3)
    compare_with_platform_opencv(rgb_to_gray(rgb), cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), "gray")


@pytest.mark.parametrize("size", SIZES)
def test_resize_area_real_frames(game_frames, size):
    for game, frames in game_frames.items():
        for _, gray, rgb in frames[::3]:
            for img in (gray, rgb):
                expected = opencv_area(img, size)
                compare_with_platform_opencv(resize_area(img, size), expected, f"{game} {size}")


@settings(max_examples=300, deadline=None)
@given(case=shrinks())
def test_resize_area_random_images(case):
    img, size = case
    expected = opencv_area(img, size)
    compare_with_platform_opencv(resize_area(img, size), expected, f"{img.shape} -> {size}")


def test_the_comparison_can_fail():
    """The oracle is not compared with itself: a one-pixel change is caught (or reported)."""
    img = np.random.default_rng(0).integers(0, 256, (210, 160), np.uint8)
    off = resize_area(img, (84, 84))
    off[0, 0] ^= 1
    if OPENCV_IS_REFERENCE:
        with pytest.raises(AssertionError):
            compare_with_platform_opencv(off, resize_area(img, (84, 84)), "changed")
    else:
        with pytest.warns(UserWarning, match="differs"):
            compare_with_platform_opencv(off, resize_area(img, (84, 84)), "changed")
