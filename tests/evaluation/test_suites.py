"""fastatari.evaluation.suites: every suite holds distinct, loadable ROM ids of the right count,
the smaller suites are parts of the larger, and fastatari.suites is its public path."""
from __future__ import annotations

import pytest

import fastatari
from fastatari.core.games import game_ids
from fastatari.evaluation import suites

SUITES = {name: getattr(suites, name) for name in suites.__all__}


@pytest.mark.parametrize("name", list(SUITES))
def test_suite_games_are_loadable_rom_ids(name):
    games = SUITES[name]
    assert len(set(games)) == len(games)
    assert set(games) <= set(game_ids())


def test_suite_sizes():
    assert [len(SUITES[n]) for n in ("ATARI_5", "ATARI_10", "ATARI_57", "ATARI_100K")] == \
        [5, 10, 57, 26]
    assert suites.ATARI_10[5:] == suites.ATARI_5
    assert set(suites.ATARI_10) <= set(suites.ATARI_57)
    assert set(suites.ATARI_100K) <= set(suites.ATARI_57)


def test_fastatari_suites_is_the_module():
    from fastatari import suites as public

    assert public is suites and fastatari.suites is suites
