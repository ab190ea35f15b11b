"""The ROM facts table: each ROM's action sets, modes, difficulties and screen size, which the
vector env checks options against without loading ROMs; true to ALE, used only with the ale-py
that wrote it, and a vector env without it still checks every game (each ROM loaded once)."""
from __future__ import annotations

import json

import ale_py
import pytest
from ale_py import roms

from fastatari import make_vec
from fastatari.core import romfacts
from fastatari.core.game import ALE_ACTIONS
from fastatari.core.games import game_ids
from fastatari.core.romfacts import known_facts, loaded_facts, read_facts

KW = dict(repeat_action_probability=0.0, full_action_space=True)


def facts_of_loaded(rom: str) -> romfacts.RomFacts:
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.loadROM(roms.get_rom_path(rom))
    return read_facts(rom, ale)


# minimal sets of every size, 9 legal actions (skiing), many modes, no NOOP-first quirks
@pytest.mark.parametrize("rom", ["breakout", "pong", "skiing", "freeway", "video_checkers",
                                 "space_invaders", "montezuma_revenge", "tetris"])
def test_table_agrees_with_the_loaded_rom(rom):
    assert known_facts(rom) == facts_of_loaded(rom)


@pytest.mark.slow
def test_table_agrees_for_every_rom():
    for rom in game_ids():
        assert known_facts(rom) == facts_of_loaded(rom), rom


def test_a_table_of_another_ale_py_is_not_used(tmp_path, monkeypatch):
    with open(romfacts.TABLE_FILE) as f:
        data = json.load(f)
    data["ale_py"] = "0.0.1"
    other = tmp_path / "rom_facts.json"
    other.write_text(json.dumps(data))
    monkeypatch.setattr(romfacts, "TABLE_FILE", str(other))
    for cached in (romfacts._table, romfacts.loaded_facts):
        cached.cache_clear()
    try:
        assert known_facts("pong") is None
        assert loaded_facts("pong") == facts_of_loaded("pong")  # read from the loaded ROM
    finally:
        for cached in (romfacts._table, romfacts.loaded_facts):
            cached.cache_clear()


def test_bad_options_raise_before_any_worker_starts(monkeypatch):
    def no_launch(*args, **kwargs):
        raise AssertionError("a worker was launched")

    monkeypatch.setattr("fastatari.vector.pool.launch", no_launch)
    with pytest.raises(ValueError, match=r"mode must be one of \[0, 1\] for pong, got 7"):
        make_vec(["pong", "breakout"], 2, mode={"pong": 7}, **KW)
    with pytest.raises(ValueError, match=r"fire_reset=True needs a game whose action 1 is FIRE; "
                                         r"freeway"):
        make_vec("freeway", 2, fire_reset=True)
    with pytest.raises(ValueError, match="these games have different action sets"):
        make_vec(["pong", "breakout"], 2)


def test_without_the_table_the_trainer_loads_each_rom_once(monkeypatch):
    """Another ale-py (no table): each game's ROM is loaded once in the trainer and checked
    there, before any worker starts, exactly as with the table."""
    monkeypatch.setattr(romfacts, "_table", lambda: {})
    romfacts.loaded_facts.cache_clear()
    try:
        with make_vec(["pong", "skiing"], 2, num_workers=2, **KW) as envs:
            assert envs.get_action_meanings() == [a.name for a in ALE_ACTIONS]
            envs.reset(seed=0)
        with make_vec("breakout", 2, num_workers=1) as envs:
            assert envs.get_action_meanings() == ["NOOP", "FIRE", "RIGHT", "LEFT"]
        assert romfacts.loaded_facts.cache_info().currsize == 3  # pong, skiing, breakout

        def no_launch(*args, **kwargs):
            raise AssertionError("a worker was launched")

        monkeypatch.setattr("fastatari.vector.pool.launch", no_launch)
        with pytest.raises(ValueError, match=r"mode must be one of \[0, 1\] for pong"):
            make_vec(["pong", "skiing"], 2, num_workers=2, mode={"pong": 7}, **KW)
        with pytest.raises(ValueError, match=r"mode must be one of \[0, 4, 8"):
            make_vec("breakout", 2, num_workers=1, mode=3)
    finally:
        romfacts.loaded_facts.cache_clear()
