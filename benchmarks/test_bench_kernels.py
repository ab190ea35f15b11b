"""fastatari's kernels side by side with the OpenCV/numpy code they replace, on real ALE frames.

Run with ``python -m pytest benchmarks/``; each ``benchmark.group`` is one comparison, with
the fastatari kernel once per SIMD path this CPU runs (``scalar`` always).
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest

from fastatari import kernels
from fastatari.bench.sections import kernels as bench_kernels

GAMES = ["breakout", "pong", "seaquest", "qbert"]  # qbert: few repeated rows
SIZE = bench_kernels.SCREEN_SIZE


@pytest.fixture(scope="module", params=GAMES)
def scene(request) -> bench_kernels.Scene:
    return bench_kernels.capture_scene(request.param, seed=0)


@pytest.fixture(params=kernels.simd_available())
def simd(request):
    with bench_kernels.using_simd(request.param):
        yield request.param


def group(benchmark, what: str, scene: bench_kernels.Scene) -> None:
    benchmark.group = f"{what} | {scene.game}"


def test_rgb_to_gray_fastatari(benchmark, scene, simd):
    group(benchmark, "rgb_to_gray vs cv2.cvtColor", scene)
    out = np.empty(scene.rgb_last.shape[:2], np.uint8)
    benchmark(kernels.rgb_to_gray, scene.rgb_last, out)


def test_rgb_to_gray_opencv(benchmark, scene):
    group(benchmark, "rgb_to_gray vs cv2.cvtColor", scene)
    out = np.empty(scene.rgb_last.shape[:2], np.uint8)
    benchmark(cv2.cvtColor, scene.rgb_last, cv2.COLOR_RGB2GRAY, out)


def test_resize_area_fastatari(benchmark, scene, simd):
    group(benchmark, "resize_area vs cv2.resize INTER_AREA to 84x84", scene)
    out = np.empty(SIZE[::-1], np.uint8)
    benchmark(kernels.resize_area, scene.gray, SIZE, out)


def test_resize_area_opencv(benchmark, scene):
    group(benchmark, "resize_area vs cv2.resize INTER_AREA to 84x84", scene)
    out = np.empty(SIZE[::-1], np.uint8)
    benchmark(cv2.resize, scene.gray, SIZE, out, interpolation=cv2.INTER_AREA)


def test_step_palette_fastatari(benchmark, scene, simd):
    group(benchmark, "per step: 2× getScreen + step_palette vs gymnasium style", scene)
    benchmark(bench_kernels.palette_step_fastatari(scene.ale, scene.lut))


def test_step_gymnasium_style(benchmark, scene):
    group(benchmark, "per step: 2× getScreen + step_palette vs gymnasium style", scene)
    benchmark(bench_kernels.palette_step_gymnasium(scene.ale))


def test_step_rgb_fastatari(benchmark, scene, simd):
    group(benchmark, "step_rgb vs OpenCV (2× cvtColor, max, resize, roll)", scene)
    benchmark(bench_kernels.rgb_step_fastatari(scene.rgb_prev, scene.rgb_last))


def test_step_rgb_opencv(benchmark, scene):
    group(benchmark, "step_rgb vs OpenCV (2× cvtColor, max, resize, roll)", scene)
    benchmark(bench_kernels.rgb_step_opencv(scene.rgb_prev, scene.rgb_last))
