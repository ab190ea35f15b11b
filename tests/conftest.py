"""Shared fixtures: real ALE frames, and every SIMD path the CPU runs."""
from __future__ import annotations

import numpy as np
import pytest

from fastatari import kernels

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
