"""Shared fixtures: real ALE frames, every SIMD path the CPU runs, and OpenCV on the reference."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from fastatari import kernels

from .kernels.reference import OPENCV_IS_REFERENCE, resize_area

# Eight games with different palettes, screen heights and display formats (pacman is PAL, 250
# lines; carnival 214 and pooyan 220 lines).
FRAME_GAMES = ["breakout", "pong", "space_invaders", "seaquest", "ms_pacman", "carnival",
               "pooyan", "pacman"]


def _frames(game: str, count: int = 24, seed: int = 0):
    import ale_py
    from ale_py import roms

    ale = ale_py.ALEInterface()
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.setInt("random_seed", seed)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(roms.get_rom_path(game))
    h, w = ale.getScreenDims()
    actions = ale.getMinimalActionSet()
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count * 7):
        ale.act(actions[rng.integers(len(actions))])
        if ale.game_over():
            ale.reset_game()
        if i % 7 == 6:
            idx = np.empty((h, w), np.uint8)
            gray = np.empty((h, w), np.uint8)
            rgb = np.empty((h, w, 3), np.uint8)
            ale.getScreen(idx)
            ale.getScreenGrayscale(gray)
            ale.getScreenRGB(rgb)
            out.append((idx, gray, rgb))
    return out


@pytest.fixture(scope="session")
def game_frames():
    """{game: [(palette indices, gray, rgb), ...]} from random play."""
    return {game: _frames(game) for game in FRAME_GAMES}


@pytest.fixture(params=kernels.simd_available())
def simd(request):
    """Run the test once per SIMD variant this CPU supports (scalar always)."""
    previous = kernels.set_simd_path(request.param)
    yield request.param
    kernels.set_simd_path(previous)


@pytest.fixture(autouse=True, scope="session")
def opencv_on_the_reference():
    """Where the platform's OpenCV rounds INTER_AREA differently from x86-64's (aarch64),
    ``cv2.resize`` gives the reference's bytes for the session, so every parity test compares
    fastatari with gymnasium's pipeline as it runs on x86-64; the values the platform's OpenCV
    would have changed are counted and reported at the end (a warning), never followed."""
    if OPENCV_IS_REFERENCE:
        yield
        return
    try:
        import cv2
    except ImportError:
        yield
        return
    platform_resize = cv2.resize
    changed = total = 0

    def resize(src, dsize, *args, **kwargs):
        nonlocal changed, total
        out = platform_resize(src, dsize, *args, **kwargs)
        if args or kwargs != {"interpolation": cv2.INTER_AREA} or src.dtype != np.uint8:
            return out
        ours = resize_area(src, tuple(dsize))
        diff = np.abs(ours.astype(np.int16) - out)
        assert diff.max(initial=0) <= 1, "the platform's INTER_AREA is more than 1 off"
        changed += int(np.count_nonzero(diff))
        total += diff.size
        return ours

    resize.__wrapped__ = platform_resize  # type: ignore[attr-defined]
    cv2.resize = resize
    try:
        yield
    finally:
        cv2.resize = platform_resize
    if changed:
        warnings.warn(f"this platform's OpenCV INTER_AREA differs from the x86-64 reference in "
                      f"{changed} of {total} values (by 1); the parity tests used the reference",
                      stacklevel=1)


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_the_session_folder(tmp_path_factory):
    """Stable-Baselines3 makes a log folder per model it configures (``/tmp/SB3-<time>`` when
    ``SB3_LOGDIR`` is unset): the session's temporary folder holds them instead."""
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SB3_LOGDIR", None)
        else:
            os.environ["SB3_LOGDIR"] = before
